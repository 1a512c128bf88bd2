// Package filter decides which consumer groups and topics checkpointd replicates, with
// MirrorMaker 2's DefaultGroupFilter and DefaultTopicFilter semantics: a name is
// replicated when the include list matches it and the exclude list does not. The lists
// are comma-separated Java regexes (see javaregex); MM2's default lists are
// configuration defaults, which callers pass in.
package filter

import (
	"fmt"
	"sync"

	"github.com/checkpointd/checkpointd/internal/javaregex"
)

// Matcher decides whether a group or topic name is replicated. The pipeline takes a
// Matcher so that a custom filter can replace the MM2 one.
type Matcher interface {
	Match(name string) bool
}

// Filter is MM2's include/exclude filter. It is safe for concurrent use.
type Filter struct {
	include *javaregex.List
	exclude *javaregex.List

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
	_ Matcher = (*javaregex.List)(nil)
)

// New builds a filter from an include and an exclude list as MM2 configures them
// (for example groups and groups.exclude). An empty include list matches nothing; the
// caller passes MM2's defaults when none are configured. Errors wrap a
// *javaregex.PatternError.
func New(include, exclude string) (*Filter, error) {
	in, err := javaregex.ParseList(include)
	if err != nil {
		return nil, fmt.Errorf("include list: %w", err)
	}
	ex, err := javaregex.ParseList(exclude)
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
