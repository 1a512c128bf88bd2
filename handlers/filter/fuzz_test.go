package filter

import (
	"errors"
	"regexp"
	"testing"
)

// FuzzNew checks that no list makes New panic, and that every list it accepts was
// translated into an expression Go's regexp compiles.
func FuzzNew(f *testing.F) {
	for _, seed := range append([]string{DefaultGroupsExclude, DefaultTopicsExclude}, javaCases...) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, list string) {
		filter, err := New(list, list)
		if err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("New(%q) error %v is not a *PatternError", list, err)
			}
			return
		}
		filter.Match(list)
		for _, entry := range splitList(list) {
			if expr, err := translate(entry); err == nil {
				if _, err := regexp.Compile(expr); err != nil && len(entry) < 100 {
					t.Fatalf("entry %q translated to %q, which does not compile: %v", entry, expr, err)
				}
			}
		}
	})
}
