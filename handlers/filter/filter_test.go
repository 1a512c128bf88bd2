package filter

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/checkpointd/checkpointd/internal/javaregex"
)

func TestIncludeExclude(t *testing.T) {
	tests := []struct {
		name    string
		include string
		exclude string
		matches map[string]bool
	}{
		{name: "empty include matches nothing", include: "", exclude: "", matches: map[string]bool{"a": false, "": false}},
		{name: "empty exclude excludes nothing", include: ".*", exclude: "", matches: map[string]bool{"a": true, "": true}},
		{name: "exclude wins", include: "app-.*", exclude: "app-test", matches: map[string]bool{"app-prod": true, "app-test": false}},
		{name: "exclude alone keeps nothing", include: "", exclude: "x", matches: map[string]bool{"a": false, "x": false}},
		{name: "lists are Java regexes matched whole", include: "(?i)app, b", exclude: `\Qapp.x\E`, matches: map[string]bool{"APP": true, "b": true, "app.x": false, "apps": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(tt.include, tt.exclude)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.matches {
				if got := f.Match(name); got != want {
					t.Errorf("Match(%q) = %v, want %v", name, got, want)
				}
			}
		})
	}
}

// TestNewNamesTheList: an error says which list is at fault and still unwraps to the
// *javaregex.PatternError naming the entry.
func TestNewNamesTheList(t *testing.T) {
	tests := []struct {
		include, exclude string
		prefix, pattern  string
	}{
		{include: ".*", exclude: "ok, x(?=y)", prefix: "exclude list: ", pattern: "x(?=y)"},
		{include: "(", exclude: "", prefix: "include list: ", pattern: "("},
	}
	for _, tt := range tests {
		_, err := New(tt.include, tt.exclude)
		if err == nil || !strings.HasPrefix(err.Error(), tt.prefix) {
			t.Errorf("New(%q, %q) error = %v, want it to start %q", tt.include, tt.exclude, err, tt.prefix)
			continue
		}
		var pe *javaregex.PatternError
		if !errors.As(err, &pe) || pe.Pattern != tt.pattern {
			t.Errorf("New(%q, %q) error = %v, want a *javaregex.PatternError for %q", tt.include, tt.exclude, err, tt.pattern)
		}
	}
}

// TestFilterMemo: answers from the verdict cache equal fresh ones, and the
// cache stops growing at memoLimit while names past it are still matched.
func TestFilterMemo(t *testing.T) {
	f, err := New("g-.*, orders", "g-skip-.*")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{"g-1": true, "orders": true, "g-skip-1": false, "other": false, "": false}
	for round := 0; round < 2; round++ { // the second round is served from the cache
		for name, want := range cases {
			if got := f.Match(name); got != want {
				t.Errorf("round %d: Match(%q) = %v, want %v", round, name, got, want)
			}
		}
	}
	for i := 0; len(f.verdicts) < memoLimit; i++ {
		f.Match(fmt.Sprintf("fill-%d", i))
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("g-late-%d", i)
		if !f.Match(name) || !f.Match(name) {
			t.Errorf("Match(%q) = false past the cache limit", name)
		}
		if f.Match("g-skip-late") {
			t.Error("Match(g-skip-late) = true past the cache limit")
		}
	}
	if len(f.verdicts) != memoLimit {
		t.Errorf("cache holds %d names, want at most %d", len(f.verdicts), memoLimit)
	}
}
