package javaregex

import (
	"strings"
	"unicode"
)

// Java's predefined classes (java.util.regex.Pattern, without UNICODE_CHARACTER_CLASS).
// \s and \v differ from RE2's: Java's \s includes \x0B, and its \v is vertical whitespace,
// not the single character \x0B.
var (
	javaDigits          = span('0', '9')
	javaWordChars       = runeSet{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	javaWhitespace      = runeSet{{'\t', '\r'}, {' ', ' '}}
	javaHorizontalSpace = runeSet{{'\t', '\t'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x180E, 0x180E}, {0x2000, 0x200A}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}}
	javaVerticalSpace   = runeSet{{'\n', '\r'}, {0x85, 0x85}, {0x2028, 0x2029}}
	// javaLineTerminators are what "." does not match unless DOTALL (or only \n with UNIX_LINES).
	javaLineTerminators = runeSet{{'\n', '\n'}, {'\r', '\r'}, {0x85, 0x85}, {0x2028, 0x2029}}
	anyRune             = span(0, unicode.MaxRune)
)

// predefinedClass resolves \d \D \w \W \s \S \h \H \v \V.
func predefinedClass(letter rune) (runeSet, bool) {
	var s runeSet
	switch letter | 0x20 { // lower case
	case 'd':
		s = javaDigits
	case 'w':
		s = javaWordChars
	case 's':
		s = javaWhitespace
	case 'h':
		s = javaHorizontalSpace
	case 'v':
		s = javaVerticalSpace
	default:
		return nil, false
	}
	if letter >= 'A' && letter <= 'Z' {
		return s.complement(), true
	}
	return s, true
}

// posixClass resolves the ASCII classes Java's \p{name} knows (CharPredicates.forProperty);
// under CASE_INSENSITIVE, Lower and Upper mean Alpha, as in Java.
func posixClass(name string, caseInsensitive bool) (runeSet, bool) {
	lower, upper := span('a', 'z'), span('A', 'Z')
	if caseInsensitive {
		lower, upper = union(lower, upper), union(lower, upper)
	}
	switch name {
	case "ASCII":
		return span(0, 0x7F), true
	case "Alnum":
		return runeSet{{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}, true
	case "Alpha":
		return runeSet{{'A', 'Z'}, {'a', 'z'}}, true
	case "Blank":
		return runeSet{{'\t', '\t'}, {' ', ' '}}, true
	case "Cntrl":
		return runeSet{{0, 0x1F}, {0x7F, 0x7F}}, true
	case "Digit":
		return javaDigits, true
	case "Graph":
		return span(0x21, 0x7E), true
	case "Lower":
		return lower, true
	case "Print":
		return span(0x20, 0x7E), true
	case "Punct":
		return runeSet{{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}, true
	case "Space":
		return javaWhitespace, true
	case "Upper":
		return upper, true
	case "XDigit":
		return runeSet{{'0', '9'}, {'A', 'F'}, {'a', 'f'}}, true
	case "L1":
		return span(0, 0xFF), true
	case "all":
		return anyRune, true
	}
	return nil, false
}

// javaCategories are the general categories Java's \p{name} knows, less C and Cn: Java's C
// includes unassigned code points (Cn), for which Go has no table.
var javaCategories = strings.Fields("L Lu Ll Lt Lm Lo M Mn Me Mc N Nd Nl No Z Zs Zl Zp Cc Cf Co Cs P Pd Ps Pe Pc Po Pi Pf S Sm Sc Sk So")

// categoryClass resolves a general category, plus Java's LC and LD. Under
// CASE_INSENSITIVE, Java widens Lu, Ll and Lt to all three.
func categoryClass(name string, caseInsensitive bool) (runeSet, bool) {
	cased := func() runeSet {
		return union(fromTable(unicode.Lu), fromTable(unicode.Ll), fromTable(unicode.Lt))
	}
	switch name {
	case "LC":
		return cased(), true
	case "LD":
		return union(fromTable(unicode.L), fromTable(unicode.Nd)), true
	case "Lu", "Ll", "Lt":
		if caseInsensitive {
			return cased(), true
		}
	}
	for _, c := range javaCategories {
		if c == name {
			return fromTable(unicode.Categories[name]), true
		}
	}
	return nil, false
}

// scriptClass resolves a Unicode script by name, ignoring case as Java does. Java's
// four-letter aliases (Latn) are not known to Go and are not found.
func scriptClass(name string) (runeSet, bool) {
	for goName, table := range unicode.Scripts {
		if strings.EqualFold(goName, name) {
			return fromTable(table), true
		}
	}
	return nil, false
}
