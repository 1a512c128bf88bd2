package javaregex

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// translate turns a Java regular expression (java.util.regex.Pattern, as MM2 compiles a
// configured list) into an RE2 expression that fully matches exactly the strings the Java
// one fully matches, or explains why that cannot be done.
//
// The parser follows Pattern's own recursive descent (expr, sequence, closure, clazz,
// range, escape, family, group0, addFlag) so that Java's quirks carry over: "]" and "}"
// are literals, "{" must start a counted repetition, "-" after a class escape is a
// literal, inline flags last to the end of the enclosing group.
func translate(pattern string) (string, error) {
	src, origin := removeQuoting([]rune(pattern))
	p := &parser{src: src, origin: origin, groupNames: map[string]bool{}, properties: map[string]runeSet{}}
	root, err := p.parseAlternation()
	if err != nil {
		return "", err
	}
	if !p.atEnd() {
		return "", p.invalid(p.pos, "unmatched closing ')'")
	}
	var b strings.Builder
	b.WriteString(`\A(?:`)
	if err := root.emit(&b, true); err != nil {
		return "", err
	}
	b.WriteString(`)\z`)
	return b.String(), nil
}

type regexFlags uint8

// The inline flags. MULTILINE, COMMENTS, CANON_EQ and UNICODE_CHARACTER_CLASS are
// refused where they are set.
const (
	caseInsensitive regexFlags = 1 << iota // i
	unixLines                              // d
	dotAll                                 // s
	unicodeCase                            // u
)

type parser struct {
	src        []rune
	origin     []int // rune index in the pattern as written, per src rune
	pos        int
	flags      regexFlags
	groupNames map[string]bool
	depth      int                // of nested groups
	properties map[string]runeSet // resolved \p{...} by name and flags, as lists repeat them
}

// maxGroupDepth bounds the parser's recursion; Go's regexp has the same limit.
const maxGroupDepth = 1000

func (p *parser) atEnd() bool { return p.pos >= len(p.src) }

// peekAt returns the rune n places ahead, or -1 past the end.
func (p *parser) peekAt(n int) rune {
	if p.pos+n < len(p.src) {
		return p.src[p.pos+n]
	}
	return -1
}

func (p *parser) peek() rune { return p.peekAt(0) }

func (p *parser) next() rune {
	r := p.peek()
	if r >= 0 {
		p.pos++
	}
	return r
}

// written returns the pattern as written from src position from up to the parser's position.
func (p *parser) written(from int) string {
	return string(p.src[from:min(p.pos, len(p.src))])
}

func (p *parser) originOf(pos int) int {
	if pos < len(p.origin) {
		return p.origin[pos]
	}
	if len(p.origin) == 0 {
		return 0
	}
	return p.origin[len(p.origin)-1] + 1
}

// invalid reports something Java's Pattern would reject as well.
func (p *parser) invalid(pos int, format string, args ...any) error {
	return &regexError{pos: p.originOf(pos), msg: fmt.Sprintf(format, args...)}
}

// unsupported reports valid Java that Go's regexp cannot match the same way.
func (p *parser) unsupported(pos int, format string, args ...any) error {
	return &regexError{pos: p.originOf(pos), msg: fmt.Sprintf(format, args...), unsupported: true}
}

// parseAlternation is Pattern.expr: sequences separated by "|".
func (p *parser) parseAlternation() (node, error) {
	var branches alternation
	for {
		seq, err := p.parseSequence()
		if err != nil {
			return nil, err
		}
		branches = append(branches, seq)
		if p.peek() != '|' {
			break
		}
		p.pos++
	}
	if len(branches) == 1 {
		return branches[0], nil
	}
	return branches, nil
}

// parseSequence is Pattern.sequence: atoms, each with an optional quantifier.
func (p *parser) parseSequence() (node, error) {
	var seq sequence
	for !p.atEnd() {
		start := p.pos
		var n node
		var err error
		switch c := p.peek(); c {
		case '|', ')':
			return seq, nil
		case '(':
			n, err = p.parseGroup()
			if err == nil && n == nil {
				continue // inline flags only; Java takes no quantifier here
			}
		case '[':
			n, err = p.parseClass()
		case '\\':
			n, err = p.parseEscapeOutsideClass()
		case '^':
			p.pos++
			n = anchor{kind: beginInput}
		case '$':
			p.pos++
			n = anchor{kind: endInputOrFinal, pos: p.originOf(start), text: "$"}
		case '.':
			p.pos++
			n = p.dot()
		case '?', '*', '+':
			return nil, p.invalid(start, "dangling meta character '%c'", c)
		case '{':
			// Java parses an empty atom here and "{" must then be a counted repetition.
			n = sequence{}
		default:
			p.pos++
			n, err = p.literal(start, c)
		}
		if err != nil {
			return nil, err
		}
		if n, err = p.parseQuantifier(n); err != nil {
			return nil, err
		}
		seq = append(seq, n)
	}
	return seq, nil
}

// parseQuantifier is Pattern.closure.
func (p *parser) parseQuantifier(n node) (node, error) {
	start := p.pos
	var lo, hi int // hi < 0: unbounded
	switch p.peek() {
	case '?':
		lo, hi = 0, 1
	case '*':
		lo, hi = 0, -1
	case '+':
		lo, hi = 1, -1
	case '{':
		if !isASCIIDigit(p.peekAt(1)) {
			return nil, p.invalid(start, "illegal repetition %s", quoted(string(p.src[start:min(len(p.src), start+8)])))
		}
		p.pos++
		var err error
		if lo, err = p.repeatCount(start); err != nil {
			return nil, err
		}
		hi = lo
		if p.peek() == ',' {
			p.pos++
			hi = -1
			if p.peek() != '}' {
				if hi, err = p.repeatCount(start); err != nil {
					return nil, err
				}
			}
		}
		if p.peek() != '}' {
			return nil, p.invalid(start, "unclosed counted closure")
		}
		if hi >= 0 && hi < lo {
			return nil, p.invalid(start, "illegal repetition range %s", quoted(p.written(start)+"}"))
		}
		if lo > maxRepeat || hi > maxRepeat {
			return nil, p.unsupported(start, "repetition count in %s is over %d, Go's regexp limit", quoted(p.written(start)+"}"), maxRepeat)
		}
	default:
		return n, nil
	}
	p.pos++
	switch p.peek() {
	case '?': // reluctant: the same whole-string matches
		p.pos++
	case '+':
		p.pos++
		return nil, p.unsupported(start, "possessive quantifier %s is not supported: Go's regexp (RE2) has no possessive quantifiers", quoted(p.written(start)))
	}
	return repetition{sub: n, min: lo, max: hi}, nil
}

// repeatCount reads the digits of a counted repetition; a count too large for an int is
// an error in Java as well.
func (p *parser) repeatCount(start int) (int, error) {
	from := p.pos
	for isASCIIDigit(p.peek()) {
		p.pos++
	}
	n, err := strconv.Atoi(string(p.src[from:p.pos]))
	if err != nil || n > 1<<31-1 {
		if from == p.pos {
			return 0, p.invalid(start, "unclosed counted closure")
		}
		return 0, p.invalid(start, "illegal repetition range")
	}
	return n, nil
}

// parseGroup is Pattern.group0. It returns nil for a group of inline flags only, whose
// flags then hold to the end of the enclosing group.
func (p *parser) parseGroup() (node, error) {
	open := p.pos
	if p.depth++; p.depth > maxGroupDepth {
		return nil, p.unsupported(open, "groups nested deeper than %d are not supported", maxGroupDepth)
	}
	defer func() { p.depth-- }()
	saved := p.flags
	p.pos++ // (
	if p.peek() == '?' {
		p.pos++
		switch c := p.next(); c {
		case ':':
		case '=', '!':
			return nil, p.unsupported(open, "lookahead %s is not supported: Go's regexp (RE2) has no lookaround", quoted("(?"+string(c)))
		case '>':
			return nil, p.unsupported(open, `atomic group "(?>" is not supported: Go's regexp (RE2) has no atomic groups`)
		case '<':
			c = p.next()
			if c == '=' || c == '!' {
				return nil, p.unsupported(open, "lookbehind %s is not supported: Go's regexp (RE2) has no lookaround", quoted("(?<"+string(c)))
			}
			if err := p.groupName(open, c); err != nil {
				return nil, err
			}
		case '$', '@':
			return nil, p.invalid(open, "unknown group type")
		default:
			if c >= 0 {
				p.pos--
			}
			if err := p.inlineFlags(open); err != nil {
				return nil, err
			}
			switch p.next() {
			case ')':
				return nil, nil
			case ':':
			default:
				return nil, p.invalid(open, "unknown inline modifier")
			}
		}
	}
	sub, err := p.parseAlternation()
	if err != nil {
		return nil, err
	}
	if p.next() != ')' {
		return nil, p.invalid(open, "unclosed group")
	}
	p.flags = saved
	return sub, nil
}

// groupName reads the name of (?<name>...), which Java wants ASCII alphanumeric,
// starting with a letter, and unique.
func (p *parser) groupName(open int, first rune) error {
	if !isASCIIAlpha(first) {
		return p.invalid(open, "capturing group name does not start with a Latin letter")
	}
	from := p.pos - 1
	for isASCIIAlpha(p.peek()) || isASCIIDigit(p.peek()) {
		p.pos++
	}
	name := string(p.src[from:p.pos])
	if p.next() != '>' {
		return p.invalid(open, "named capturing group is missing trailing '>'")
	}
	if p.groupNames[name] {
		return p.invalid(open, "named capturing group <%s> is already defined", name)
	}
	p.groupNames[name] = true
	return nil
}

// inlineFlags is Pattern.addFlag and subFlag: letters to set, then "-" and letters to clear.
func (p *parser) inlineFlags(open int) error {
	set := true
	for {
		c := p.peek()
		var f regexFlags
		switch c {
		case 'i':
			f = caseInsensitive
		case 'd':
			f = unixLines
		case 's':
			f = dotAll
		case 'u':
			f = unicodeCase
		case 'm', 'x', 'c', 'U':
			if set {
				return p.unsupported(p.pos, "inline flag (?%c) is not supported (%s)", c, unsupportedFlags[c])
			}
			// Clearing a flag that is never set changes nothing, except that Java's
			// (?-U) clears UNICODE_CASE as well.
			if c == 'U' {
				f = unicodeCase
			}
		case '-':
			if !set {
				return nil // Java's subFlag stops here; the caller then rejects the "-"
			}
			set = false
			p.pos++
			continue
		default:
			return nil
		}
		if set {
			p.flags |= f
		} else {
			p.flags &^= f
		}
		p.pos++
	}
}

var unsupportedFlags = map[rune]string{
	'm': "in MULTILINE mode Java's ^ and $ match at line terminators Go does not know",
	'x': "COMMENTS mode",
	'c': "CANON_EQ has no Go equivalent",
	'U': "UNICODE_CHARACTER_CLASS changes \\w, \\d, \\s and \\b in ways Go's classes do not follow",
}

// literal builds the node for one literal code point, applying case insensitivity as
// Java does without UNICODE_CASE: ASCII letters only.
func (p *parser) literal(pos int, r rune) (node, error) {
	s, err := p.foldable(pos, single(r))
	return class(s), err
}

// foldable applies CASE_INSENSITIVE to a set of literal code points.
func (p *parser) foldable(pos int, s runeSet) (runeSet, error) {
	if p.flags&caseInsensitive == 0 {
		return s, nil
	}
	if p.flags&unicodeCase != 0 {
		return nil, p.unsupported(pos, "Unicode case-insensitive matching (?iu) is not supported: Java's case mapping differs from Go's case folding")
	}
	return s.foldASCII(), nil
}

// dot is Java's ".": anything but a line terminator, unless DOTALL or UNIX_LINES.
func (p *parser) dot() node {
	switch {
	case p.flags&dotAll != 0:
		return class(anyRune)
	case p.flags&unixLines != 0:
		return class(single('\n').complement())
	default:
		return class(javaLineTerminators.complement())
	}
}

// parseClass is Pattern.clazz: a bracketed class.
func (p *parser) parseClass() (node, error) {
	open := p.pos
	p.pos++ // [
	negated := false
	if p.peek() == '^' {
		p.pos++
		negated = true
	}
	var set runeSet
	empty := true
	for {
		switch c := p.peek(); {
		case c < 0:
			return nil, p.invalid(open, "unclosed character class")
		case c == '[':
			return nil, p.unsupported(p.pos, "nested character class (union) is not supported; list the members in one class")
		case c == '&' && p.peekAt(1) == '&':
			return nil, p.unsupported(p.pos, `character class intersection "&&" is not supported by Go's regexp`)
		case c == ']' && !empty: // Java takes a "]" that would leave the class empty literally
			p.pos++
			if negated {
				set = set.complement()
			}
			return class(set.normalize()), nil
		}
		member, err := p.parseClassMember()
		if err != nil {
			return nil, err
		}
		set = append(set, member...)
		empty = false
	}
}

// parseClassMember is Pattern.range: a character, a range or a class escape.
func (p *parser) parseClassMember() (runeSet, error) {
	start := p.pos
	var lo rune
	if p.peek() == '\\' {
		e, err := p.parseEscape(true, false)
		if err != nil {
			return nil, err
		}
		if e.set != nil {
			return e.set, nil // a "-" after it is a literal, as in Java
		}
		lo = e.char
	} else {
		lo = p.next()
	}
	if p.peek() == '-' {
		switch end := p.peekAt(1); end {
		case '[', ']':
			// "a-[" leaves "-" for the next member; "a-]" makes it a literal.
		case -1:
			return nil, p.invalid(start, "unclosed character class")
		default:
			p.pos++ // -
			hi := end
			if end == '\\' {
				e, err := p.parseEscape(true, true)
				if err != nil {
					return nil, err
				}
				if e.set != nil {
					return nil, p.invalid(start, "illegal character range %s", quoted(p.written(start)))
				}
				hi = e.char
			} else {
				p.pos++
			}
			if hi < lo {
				return nil, p.invalid(start, "illegal character range %s", quoted(p.written(start)))
			}
			return p.foldable(start, span(lo, hi))
		}
	}
	return p.foldable(start, single(lo))
}

// parseEscapeOutsideClass turns an escape into a node.
func (p *parser) parseEscapeOutsideClass() (node, error) {
	start := p.pos
	e, err := p.parseEscape(false, false)
	switch {
	case err != nil:
		return nil, err
	case e.anchor != nil:
		return *e.anchor, nil
	case e.set != nil:
		return class(e.set), nil
	default:
		return p.literal(start, e.char)
	}
}

// escape is what a backslash sequence stands for: one code point, a class or an anchor.
type escape struct {
	char   rune
	set    runeSet
	anchor *anchor
}

// parseEscape is Pattern.escape (and family for \p), at a backslash.
//
// rangeEnd says the escape ends a class range: Java then reads \v as the character \x0B,
// as it does for an escape followed by "-".
func (p *parser) parseEscape(inClass, rangeEnd bool) (escape, error) {
	start := p.pos
	p.pos++ // \
	c := p.next()
	rangeBound := inClass && (rangeEnd || p.peek() == '-')
	switch {
	case c < 0:
		return escape{}, p.invalid(start, "unexpected end of pattern after '\\'")
	case c == '0':
		return p.octal(start)
	case c >= '1' && c <= '9', c == 'k':
		return escape{}, p.unsupported(start, "backreference %s is not supported: Go's regexp (RE2) has no backreferences", quoted(p.written(start)))
	case c == 'A' || c == 'z' || c == 'Z':
		if inClass {
			return escape{}, p.invalid(start, "illegal/unsupported escape sequence %s in a class", quoted(p.written(start)))
		}
		switch c {
		case 'A':
			return escape{anchor: &anchor{kind: beginInput}}, nil
		case 'z':
			return escape{anchor: &anchor{kind: endInput}}, nil
		default:
			return escape{anchor: &anchor{kind: endInputOrFinal, pos: p.originOf(start), text: `\Z`}}, nil
		}
	case c == 'b' || c == 'B':
		return escape{}, p.unsupported(start, `word boundary %s is not supported: Java's definition of a word character for it varies by Java version and differs from Go's`, quoted(p.written(start)))
	case c == 'G':
		return escape{}, p.unsupported(start, `\G (end of the previous match) is not supported`)
	case c == 'R':
		return escape{}, p.unsupported(start, `linebreak matcher \R is not supported: it does not backtrack in Java`)
	case c == 'X':
		return escape{}, p.unsupported(start, `grapheme cluster \X is not supported by Go's regexp`)
	case c == 'N':
		return escape{}, p.unsupported(start, `named character \N{...} is not supported: Go has no Unicode name table`)
	case c == 'p' || c == 'P':
		set, err := p.property(start, c == 'P')
		return escape{set: set}, err
	case c == 'v' && rangeBound:
		return escape{char: '\x0B'}, nil
	case c == 'x':
		return p.hex(start)
	case c == 'u':
		return p.unicodeEscape(start)
	case c == 'c':
		// Java: the next character XOR 64 (\cA is \x01, \c? is \x7F).
		if p.atEnd() {
			return escape{}, p.invalid(start, "illegal control escape sequence")
		}
		return escape{char: p.next() ^ 64}, nil
	}
	if set, ok := predefinedClass(c); ok {
		return escape{set: set}, nil
	}
	if r, ok := simpleEscapes[c]; ok {
		return escape{char: r}, nil
	}
	if isASCIIAlpha(c) {
		return escape{}, p.invalid(start, "illegal/unsupported escape sequence %s", quoted(p.written(start)))
	}
	return escape{char: c}, nil // any other escaped character stands for itself
}

var simpleEscapes = map[rune]rune{'a': 0x07, 'e': 0x1B, 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// octal is Pattern.o: \0n, \0nn or \0mnn with m at most 3.
func (p *parser) octal(start int) (escape, error) {
	isOctal := func(r rune) bool { return r >= '0' && r <= '7' }
	if !isOctal(p.peek()) {
		return escape{}, p.invalid(start, "illegal octal escape sequence")
	}
	v := p.next() - '0'
	if isOctal(p.peek()) {
		v = v*8 + p.next() - '0'
		if isOctal(p.peek()) && v < 040 { // the first digit was at most 3
			v = v*8 + p.next() - '0'
		}
	}
	return escape{char: v}, nil
}

// hex is Pattern.x: \xhh or \x{h...h}.
func (p *parser) hex(start int) (escape, error) {
	if p.peek() == '{' {
		p.pos++
		from := p.pos
		for isHexDigit(p.peek()) {
			p.pos++
		}
		if p.pos == from || p.peek() != '}' {
			return escape{}, p.invalid(start, "unclosed hexadecimal escape sequence")
		}
		v, err := strconv.ParseUint(string(p.src[from:p.pos]), 16, 32)
		p.pos++
		if err != nil || v > 0x10FFFF {
			return escape{}, p.invalid(start, "hexadecimal codepoint is too big")
		}
		return escape{char: rune(v)}, nil
	}
	if !isHexDigit(p.peek()) || !isHexDigit(p.peekAt(1)) {
		return escape{}, p.invalid(start, "illegal hexadecimal escape sequence")
	}
	v, _ := strconv.ParseUint(string(p.src[p.pos:p.pos+2]), 16, 8)
	p.pos += 2
	return escape{char: rune(v)}, nil
}

// unicodeEscape is Pattern.u: \uhhhh, where a high surrogate followed by an escaped low
// surrogate stands for one supplementary code point.
func (p *parser) unicodeEscape(start int) (escape, error) {
	v, ok := p.fourHex()
	if !ok {
		return escape{}, p.invalid(start, "illegal Unicode escape sequence")
	}
	if utf16.IsSurrogate(v) && v < 0xDC00 && p.peek() == '\\' && p.peekAt(1) == 'u' {
		save := p.pos
		p.pos += 2
		if low, ok := p.fourHex(); ok && low >= 0xDC00 && low <= 0xDFFF {
			return escape{char: utf16.DecodeRune(v, low)}, nil
		}
		p.pos = save
	}
	return escape{char: v}, nil
}

func (p *parser) fourHex() (rune, bool) {
	for i := range 4 {
		if !isHexDigit(p.peekAt(i)) {
			return 0, false
		}
	}
	v, _ := strconv.ParseUint(string(p.src[p.pos:p.pos+4]), 16, 16)
	p.pos += 4
	return rune(v), true
}

func isHexDigit(r rune) bool {
	return isASCIIDigit(r) || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
}

// property is Pattern.family: \p{name}, \pL, \P{...}, at the character after "p".
func (p *parser) property(start int, negated bool) (runeSet, error) {
	var name string
	switch c := p.next(); c {
	case -1:
		return nil, p.invalid(start, "unexpected end of pattern after \\p")
	case '{':
		from := p.pos
		for p.peek() >= 0 && p.peek() != '}' {
			p.pos++
		}
		if p.atEnd() {
			return nil, p.invalid(start, "unclosed character family")
		}
		name = string(p.src[from:p.pos])
		p.pos++
		if name == "" {
			return nil, p.invalid(start, "empty character family")
		}
	default:
		name = string(c)
	}
	key := fmt.Sprint(name, p.flags&caseInsensitive)
	set, ok := p.properties[key]
	if !ok {
		var err error
		if set, err = p.resolveProperty(start, name); err != nil {
			return nil, err
		}
		p.properties[key] = set
	}
	if negated {
		return set.complement(), nil
	}
	return set, nil
}

func (p *parser) resolveProperty(start int, name string) (runeSet, error) {
	ci := p.flags&caseInsensitive != 0
	written := p.written(start)
	if key, value, ok := strings.Cut(name, "="); ok {
		switch strings.ToLower(key) {
		case "sc", "script":
			if s, ok := scriptClass(value); ok {
				return s, nil
			}
			return nil, p.unsupported(start, "script %s in %s is not known to Go's Unicode tables (Java's four-letter aliases are not supported; use the full name)", quoted(value), quoted(written))
		case "blk", "block":
			return nil, p.unsupported(start, "Unicode block %s is not supported: Go has no block tables", quoted(written))
		case "gc", "general_category":
			name = value
		default:
			return nil, p.invalid(start, "unknown Unicode property %s", quoted(written))
		}
	} else if strings.HasPrefix(name, "In") {
		return nil, p.unsupported(start, "Unicode block %s is not supported: Go has no block tables", quoted(written))
	} else if short, ok := strings.CutPrefix(name, "Is"); ok {
		if s, ok := categoryClass(short, ci); ok {
			return s, nil
		}
		if s, ok := scriptClass(short); ok {
			return s, nil
		}
		return nil, p.unsupported(start, "property %s is not supported (only \\p{IsCategory} and \\p{IsScript} are)", quoted(written))
	}
	if s, ok := posixClass(name, ci); ok {
		return s, nil
	}
	if s, ok := categoryClass(name, ci); ok {
		return s, nil
	}
	if strings.HasPrefix(name, "java") || name == "C" || name == "Cn" {
		return nil, p.unsupported(start, "property %s is not supported: Go has no equivalent table", quoted(written))
	}
	return nil, p.invalid(start, "unknown character property %s", quoted(written))
}
