package javaregex

import (
	"errors"
	"regexp"
	"testing"
)

// FuzzParseList checks that no list makes ParseList or Match panic, that every error is
// a *PatternError, and that every entry translate accepts is an expression Go's regexp
// compiles.
func FuzzParseList(f *testing.F) {
	// MM2's default exclude lists, then the differential test's patterns.
	seeds := []string{"console-consumer-.*, connect-.*, __.*", `mm2.*\.internal, .*\.replica, __.*`}
	for _, seed := range append(seeds, javaCases...) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, list string) {
		l, err := ParseList(list)
		if err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseList(%q) error %v is not a *PatternError", list, err)
			}
			return
		}
		l.Match(list)
		for _, entry := range splitList(list) {
			if expr, err := translate(entry); err == nil {
				if _, err := regexp.Compile(expr); err != nil && len(entry) < 100 {
					t.Fatalf("entry %q translated to %q, which does not compile: %v", entry, expr, err)
				}
			}
		}
	})
}
