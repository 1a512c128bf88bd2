package javaregex

import (
	"errors"
	"strings"
	"testing"
)

func TestListSemantics(t *testing.T) {
	tests := []struct {
		name    string
		list    string
		matches map[string]bool
	}{
		{name: "empty list matches nothing", list: "", matches: map[string]bool{"a": false, "": false}},
		{name: "blank list matches nothing", list: " \t ", matches: map[string]bool{"a": false, "": false}},
		{name: "whole-name match", list: "app", matches: map[string]bool{"app": true, "app-1": false, "my-app": false}},
		{name: "blanks around commas", list: " a ,\tb\n,c ", matches: map[string]bool{"a": true, "b": true, "c": true, " a": false}},
		{name: "inner blanks are part of the regex", list: "a b", matches: map[string]bool{"a b": true, "ab": false}},
		{name: "empty entry matches the empty name", list: "a,,b", matches: map[string]bool{"": true, "a": true}},
		{name: "trailing comma keeps an empty entry", list: "a,", matches: map[string]bool{"": true}},
		{name: "entries joined then parsed", list: "(a,b)", matches: map[string]bool{"a": true, "b": true}},
		{name: "alternation inside an entry", list: "a|b, c", matches: map[string]bool{"a": true, "b": true, "c": true}},
		{name: "case-insensitive flag", list: "(?i)app", matches: map[string]bool{"APP": true, "App": true}},
		{name: "flag reaches later entries, as in Java", list: "(?i)x, app", matches: map[string]bool{"APP": true}},
		{name: "quoting", list: `\Qa.b\E`, matches: map[string]bool{"a.b": true, "axb": false}},
		{name: "quote runs to the end of the list", list: `\Qa, b`, matches: map[string]bool{"a|b": true, "a": false}},
		{name: "dot does not match a line terminator", list: "a.b", matches: map[string]bool{"a\nb": false, "a\u2028b": false, "a-b": true}},
		{name: "dollar at the end", list: "app$", matches: map[string]bool{"app": true, "app\n": false}},
		{name: "Java whitespace includes VT", list: `a\sb`, matches: map[string]bool{"a\x0Bb": true}},
		{name: "Unicode category", list: `\p{Lu}+`, matches: map[string]bool{"ÉA": true, "éa": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseList(tt.list)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.matches {
				if got := l.Match(name); got != want {
					t.Errorf("Match(%q) = %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestRejectedPatterns(t *testing.T) {
	tests := []struct {
		list        string
		pattern     string // the entry the error must name
		reason      string // part of the reason
		unsupported bool
	}{
		{list: "ok, app(?=-prod)", pattern: "app(?=-prod)", reason: `lookahead "(?="`, unsupported: true},
		{list: "app(?!-test)", pattern: "app(?!-test)", reason: "lookahead", unsupported: true},
		{list: "(?<=x)y", pattern: "(?<=x)y", reason: "lookbehind", unsupported: true},
		{list: "(?<!x)y", pattern: "(?<!x)y", reason: "lookbehind", unsupported: true},
		{list: `(a)\1`, pattern: `(a)\1`, reason: "backreference", unsupported: true},
		{list: `(?<n>a)\k<n>`, pattern: `(?<n>a)\k<n>`, reason: "backreference", unsupported: true},
		{list: "a*+", pattern: "a*+", reason: "possessive", unsupported: true},
		{list: "a++", pattern: "a++", reason: "possessive", unsupported: true},
		{list: "a?+", pattern: "a?+", reason: "possessive", unsupported: true},
		{list: "a{2}+", pattern: "a{2}+", reason: "possessive", unsupported: true},
		{list: "(?>ab)", pattern: "(?>ab)", reason: "atomic group", unsupported: true},
		{list: `\bapp`, pattern: `\bapp`, reason: "word boundary", unsupported: true},
		{list: `app\B`, pattern: `app\B`, reason: "word boundary", unsupported: true},
		{list: `\Gx`, pattern: `\Gx`, reason: `\G`, unsupported: true},
		{list: `a\Rb`, pattern: `a\Rb`, reason: `\R`, unsupported: true},
		{list: `\X`, pattern: `\X`, reason: "grapheme", unsupported: true},
		{list: `\N{LATIN SMALL LETTER A}`, pattern: `\N{LATIN SMALL LETTER A}`, reason: "named character", unsupported: true},
		{list: "(?m)^a", pattern: "(?m)^a", reason: "MULTILINE", unsupported: true},
		{list: "(?x)a b", pattern: "(?x)a b", reason: "(?x)", unsupported: true},
		{list: "(?U)a", pattern: "(?U)a", reason: "UNICODE_CHARACTER_CLASS", unsupported: true},
		{list: "(?iu)é", pattern: "(?iu)é", reason: "(?iu)", unsupported: true},
		{list: "[a-z&&[^b]]", pattern: "[a-z&&[^b]]", reason: "intersection", unsupported: true},
		{list: "[a[b]]", pattern: "[a[b]]", reason: "nested character class", unsupported: true},
		{list: "a$b", pattern: "a$b", reason: `"$" is supported only at the end`, unsupported: true},
		{list: `a\Z\n`, pattern: `a\Z\n`, reason: `"\Z" is supported only at the end`, unsupported: true},
		{list: `\p{InGreek}`, pattern: `\p{InGreek}`, reason: "block", unsupported: true},
		{list: `\p{javaLowerCase}`, pattern: `\p{javaLowerCase}`, reason: "no equivalent", unsupported: true},
		{list: `\p{C}`, pattern: `\p{C}`, reason: "no equivalent", unsupported: true},
		{list: `\p{IsAlphabetic}`, pattern: `\p{IsAlphabetic}`, reason: "not supported", unsupported: true},
		{list: `\p{sc=Latn}`, pattern: `\p{sc=Latn}`, reason: "four-letter aliases", unsupported: true},
		{list: "a{1001}", pattern: "a{1001}", reason: "over 1000", unsupported: true},
		// Invalid in Java itself.
		{list: "*app", pattern: "*app", reason: "dangling meta character '*'"},
		{list: "app, (open", pattern: "(open", reason: "unclosed group"},
		{list: "close), x", pattern: "close)", reason: "unmatched closing ')'"},
		{list: "[abc", pattern: "[abc", reason: "unclosed character class"},
		{list: "[z-a]", pattern: "[z-a]", reason: "illegal character range"},
		{list: "a{", pattern: "a{", reason: "illegal repetition"},
		{list: "a{1,3}", pattern: "a{1", reason: "unclosed counted closure"}, // the comma splits the list
		{list: `\i`, pattern: `\i`, reason: "illegal/unsupported escape"},
		{list: `\p{Nope}`, pattern: `\p{Nope}`, reason: "unknown character property"},
		{list: `\E`, pattern: `\E`, reason: "illegal/unsupported escape"},
		{list: `x\`, pattern: `x\`, reason: "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			_, err := ParseList(tt.list)
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseList(%q) error = %v, want a *PatternError", tt.list, err)
			}
			if pe.Pattern != tt.pattern {
				t.Errorf("Pattern = %q, want %q", pe.Pattern, tt.pattern)
			}
			if !strings.Contains(pe.Reason, tt.reason) {
				t.Errorf("Reason = %q, want it to contain %q", pe.Reason, tt.reason)
			}
			if pe.Unsupported != tt.unsupported {
				t.Errorf("Unsupported = %v, want %v", pe.Unsupported, tt.unsupported)
			}
			if !strings.Contains(err.Error(), `"`+tt.pattern+`"`) {
				t.Errorf("error %q does not name the pattern %q", err, tt.pattern)
			}
		})
	}
}

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ", nil},
		{"a", []string{"a"}},
		{" a , b ", []string{"a", "b"}},
		{"a,", []string{"a", ""}},
		{",a", []string{"", "a"}},
		{"a, ,b", []string{"a", "", "b"}},
		{"\x01a\x01", []string{"a"}},         // String.trim strips every control character
		{"a\x01, b", []string{"a\x01", "b"}}, // but the comma split strips only \s
		{"a\v,\vb", []string{"a", "b"}},
	}
	for _, tt := range tests {
		got := splitList(tt.in)
		if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") || len(got) != len(tt.want) {
			t.Errorf("splitList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
