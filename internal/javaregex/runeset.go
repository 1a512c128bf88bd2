package javaregex

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// runeSet is a set of code points as inclusive ranges. Every character class, predefined
// class and literal is built as an explicit runeSet, so that unions, complements and
// Java's ASCII-only case folding are computed here and the RE2 output carries no class
// syntax whose meaning could differ between the engines.
type runeSet []runeRange

type runeRange struct{ lo, hi rune }

func single(r rune) runeSet         { return runeSet{{r, r}} }
func span(lo, hi rune) runeSet      { return runeSet{{lo, hi}} }
func union(sets ...runeSet) runeSet { return slices.Concat(sets...).normalize() }

// normalize sorts the ranges and merges overlapping and adjacent ones.
func (s runeSet) normalize() runeSet {
	if len(s) == 0 {
		return nil
	}
	sorted := slices.Clone(s)
	slices.SortFunc(sorted, func(a, b runeRange) int { return int(a.lo) - int(b.lo) })
	out := sorted[:1]
	for _, r := range sorted[1:] {
		last := &out[len(out)-1]
		if r.lo <= last.hi+1 {
			last.hi = max(last.hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// complement is the set of all other code points, as Java negates a class.
func (s runeSet) complement() runeSet {
	var out runeSet
	next := rune(0)
	for _, r := range s.normalize() {
		if r.lo > next {
			out = append(out, runeRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, runeRange{next, unicode.MaxRune})
	}
	return out
}

// foldASCII adds the other case of every ASCII letter in the set: Java's
// CASE_INSENSITIVE without UNICODE_CASE folds ASCII only.
func (s runeSet) foldASCII() runeSet {
	out := slices.Clone(s)
	for _, r := range s {
		if lo, hi := max(r.lo, 'A'), min(r.hi, 'Z'); lo <= hi {
			out = append(out, runeRange{lo + 'a' - 'A', hi + 'a' - 'A'})
		}
		if lo, hi := max(r.lo, 'a'), min(r.hi, 'z'); lo <= hi {
			out = append(out, runeRange{lo - ('a' - 'A'), hi - ('a' - 'A')})
		}
	}
	return out.normalize()
}

// fromTable expands a Unicode table of Go's unicode package.
func fromTable(t *unicode.RangeTable) runeSet {
	var out runeSet
	for _, r := range t.R16 {
		out = appendStrided(out, rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	for _, r := range t.R32 {
		out = appendStrided(out, rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	return out.normalize()
}

func appendStrided(out runeSet, lo, hi, stride rune) runeSet {
	if stride == 1 {
		return append(out, runeRange{lo, hi})
	}
	for r := lo; r <= hi; r += stride {
		out = append(out, runeRange{r, r})
	}
	return out
}

// emit writes the set as RE2: a quoted literal for one ASCII character, else a bracketed
// class of \x{} ranges (which also carries code points such as lone surrogates that have
// no UTF-8 form of their own).
func (s runeSet) emit(b *strings.Builder) {
	s = s.normalize()
	switch {
	case len(s) == 0:
		b.WriteString(`[^\x{0}-\x{10FFFF}]`) // matches nothing, like Java's empty intersection
	case len(s) == 1 && s[0].lo == s[0].hi && s[0].lo < 0x80:
		b.WriteString(regexp.QuoteMeta(string(s[0].lo)))
	default:
		b.WriteByte('[')
		// A negated class reads better for sets such as Java's "." (all but line terminators).
		if c := s.complement(); len(c) > 0 && len(c) < len(s) {
			b.WriteByte('^')
			s = c
		}
		for _, r := range s {
			fmt.Fprintf(b, `\x{%X}`, r.lo)
			if r.hi != r.lo {
				fmt.Fprintf(b, `-\x{%X}`, r.hi)
			}
		}
		b.WriteByte(']')
	}
}
