// Package filter decides which consumer groups and topics checkpointd replicates, with
// MirrorMaker 2's DefaultGroupFilter and DefaultTopicFilter semantics: a comma-separated
// list of Java regular expressions, joined with "|" and matched against the whole name;
// a name is replicated when the include list matches it and the exclude list does not.
//
// Java regexes are translated to Go's RE2 syntax. A construct RE2 cannot match the same
// way (lookaround, backreferences, possessive quantifiers, atomic groups, …) is rejected
// with an error naming the pattern, never approximated.
package filter

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// MM2's defaults (Kafka 4.x; 3.x excluded topics with `.*[\-\.]internal, .*\.replica, __.*`).
const (
	DefaultGroups        = ".*"
	DefaultGroupsExclude = "console-consumer-.*, connect-.*, __.*"
	DefaultTopics        = ".*"
	DefaultTopicsExclude = `mm2.*\.internal, .*\.replica, __.*`
)

// Matcher decides whether a group or topic name is replicated. The pipeline takes a
// Matcher so that a custom filter can replace the MM2 one.
type Matcher interface {
	Match(name string) bool
}

// Filter is MM2's include/exclude filter. It is safe for concurrent use.
type Filter struct {
	include *List
	exclude *List

	// verdicts remembers Match's answers: every commit record is matched
	// against the group filter, and a Java-style regex costs far more than
	// a map lookup. At most memoLimit names are kept, so a cluster with
	// ever-new group names (console consumers) cannot grow it unbounded.
	mu       sync.RWMutex
	verdicts map[string]bool
}

// memoLimit bounds Filter's verdict cache; names past it are matched every
// time.
const memoLimit = 1 << 16

var (
	_ Matcher = (*Filter)(nil)
	_ Matcher = (*List)(nil)
)

// New builds a filter from an include and an exclude list as MM2 configures them
// (for example groups and groups.exclude).
func New(include, exclude string) (*Filter, error) {
	in, err := ParseList(include)
	if err != nil {
		return nil, fmt.Errorf("include list: %w", err)
	}
	ex, err := ParseList(exclude)
	if err != nil {
		return nil, fmt.Errorf("exclude list: %w", err)
	}
	return &Filter{include: in, exclude: ex, verdicts: make(map[string]bool)}, nil
}

// Match reports whether name is included and not excluded.
func (f *Filter) Match(name string) bool {
	f.mu.RLock()
	ok, known := f.verdicts[name]
	f.mu.RUnlock()
	if known {
		return ok
	}
	ok = f.include.Match(name) && !f.exclude.Match(name)
	f.mu.Lock()
	if len(f.verdicts) < memoLimit {
		f.verdicts[name] = ok
	}
	f.mu.Unlock()
	return ok
}

// List is one comma-separated list of Java regexes, matched as MM2 matches it.
type List struct {
	re *regexp.Regexp // nil for an empty list, which matches nothing
}

// ParseList parses a list value the way Kafka's ConfigDef parses a LIST and MM2 compiles
// it: the value is trimmed, split on commas with the blanks around them, and the entries
// are joined with "|" into one Java regex. An empty list matches nothing.
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
