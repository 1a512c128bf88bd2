package javaregex

import (
	"fmt"
	"regexp"
	"strings"
)

// List is one comma-separated list of Java regexes, matched as MM2 matches it. It is
// safe for concurrent use.
type List struct {
	re *regexp.Regexp // nil for an empty list, which matches nothing
}

// ParseList parses a list value the way Kafka's ConfigDef parses a LIST and MM2 compiles
// it: the value is trimmed, split on commas with the blanks around them, and the entries
// are joined with "|" into one Java regex. An empty list matches nothing. The error is a
// *PatternError naming the entry at fault.
func ParseList(list string) (*List, error) {
	entries := splitList(list)
	if len(entries) == 0 {
		return &List{}, nil
	}
	expr, err := translate(strings.Join(entries, "|"))
	if err != nil {
		return nil, patternError(list, entries, err)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		// Java accepted it and the translation is valid RE2, so this is one of RE2's
		// size limits (a repetition count over 1000 nested in another, say).
		return nil, &PatternError{Pattern: list, Reason: fmt.Sprintf("too large for Go's regexp engine: %v", err)}
	}
	return &List{re: re}, nil
}

// Match reports whether one of the list's regexes matches the whole of name.
func (l *List) Match(name string) bool {
	return l.re != nil && l.re.MatchString(name)
}

// splitList follows ConfigDef.parseType for LIST: String.trim(), then split on
// `\s*,\s*` keeping empty entries (limit -1). An empty entry is an empty regex, which
// matches the empty name, as in Java.
func splitList(list string) []string {
	trimmed := strings.TrimFunc(list, func(r rune) bool { return r <= ' ' }) // String.trim
	if trimmed == "" {
		return nil
	}
	entries := strings.Split(trimmed, ",")
	for i := range entries {
		if i > 0 {
			entries[i] = strings.TrimLeft(entries[i], javaSpace)
		}
		if i < len(entries)-1 {
			entries[i] = strings.TrimRight(entries[i], javaSpace)
		}
	}
	return entries
}

// javaSpace is the set Java's \s matches.
const javaSpace = " \t\n\x0B\f\r"
