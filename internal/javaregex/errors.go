package javaregex

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PatternError reports a list entry that Java rejects, or that Go's engine cannot match
// the same way.
type PatternError struct {
	// Pattern is the list entry at fault; it is the whole list when the fault cannot be
	// placed in one entry.
	Pattern string
	// Reason says what is wrong, naming the construct.
	Reason string
	// Unsupported is true for a valid Java regex that Go's engine cannot match the same
	// way, false for a pattern Java itself would reject.
	Unsupported bool
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("pattern %s: %s", quoted(e.Pattern), e.Reason)
}

// quoted puts a regex in double quotes as written, so backslashes are not doubled; it
// falls back to Go quoting when the text holds quotes or unprintable characters.
func quoted(s string) string {
	if strings.ContainsRune(s, '"') || strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return `"` + s + `"`
}

// regexError is a translation failure at a position of the joined pattern.
type regexError struct {
	pos         int // rune index into the pattern as written; -1 for the pattern as a whole
	msg         string
	unsupported bool
}

func (e *regexError) Error() string { return e.msg }

// patternError places a translation error in the list entry it occurred in.
func patternError(list string, entries []string, err error) error {
	var re *regexError
	if !errors.As(err, &re) {
		return &PatternError{Pattern: list, Reason: err.Error()}
	}
	reason := re.msg
	if !re.unsupported {
		reason = "not a valid Java regex: " + reason
	}
	pattern := list
	if re.pos >= 0 {
		pattern = entryAt(entries, re.pos)
	}
	return &PatternError{Pattern: pattern, Reason: reason, Unsupported: re.unsupported}
}

// entryAt returns the entry holding rune position pos of the entries joined with "|"; a
// position on a separator or past the end belongs to the entry before it.
func entryAt(entries []string, pos int) string {
	start := 0
	for _, e := range entries {
		end := start + len([]rune(e))
		if pos <= end {
			return e
		}
		start = end + 1
	}
	return entries[len(entries)-1]
}
