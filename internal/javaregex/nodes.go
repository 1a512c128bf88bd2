package javaregex

import (
	"strconv"
	"strings"
)

// The parsed form of a Java regex, reduced to what decides which whole strings match.
// Captures, laziness and names do not change that set, so they are dropped.
type node interface {
	// emit writes the node as RE2. atEnd says that nothing can follow the node before
	// the end of the whole pattern.
	emit(b *strings.Builder, atEnd bool) error
}

type (
	sequence    []node
	alternation []node
	repetition  struct {
		sub      node
		min, max int // max < 0: unbounded
	}
	anchor struct {
		kind anchorKind
		pos  int
		text string
	}
	class runeSet
)

type anchorKind int

const (
	beginInput      anchorKind = iota // ^ and \A without MULTILINE
	endInput                          // \z
	endInputOrFinal                   // $ and \Z: end of input, or before a line terminator that ends it
)

// maxRepeat is RE2's limit on a counted repetition.
const maxRepeat = 1000

// maxExpression bounds the translation: Unicode classes are written out as ranges, and
// a list of hundreds of them would make an expression of many megabytes.
const maxExpression = 1 << 20

func (s sequence) emit(b *strings.Builder, atEnd bool) error {
	for i, n := range s {
		if err := n.emit(b, atEnd && onlyEndAnchors(s[i+1:])); err != nil {
			return err
		}
	}
	return nil
}

func onlyEndAnchors(nodes []node) bool {
	for _, n := range nodes {
		a, ok := n.(anchor)
		if !ok || a.kind == beginInput {
			return false
		}
	}
	return true
}

func (a alternation) emit(b *strings.Builder, atEnd bool) error {
	b.WriteString("(?:")
	for i, n := range a {
		if i > 0 {
			b.WriteByte('|')
		}
		if err := n.emit(b, atEnd); err != nil {
			return err
		}
	}
	b.WriteByte(')')
	return nil
}

func (r repetition) emit(b *strings.Builder, atEnd bool) error {
	b.WriteString("(?:")
	// Only an operand matched at most once can be last; another iteration may follow.
	if err := r.sub.emit(b, atEnd && r.max >= 0 && r.max <= 1); err != nil {
		return err
	}
	b.WriteByte(')')
	switch {
	case r.min == 0 && r.max < 0:
		b.WriteByte('*')
	case r.min == 1 && r.max < 0:
		b.WriteByte('+')
	case r.min == 0 && r.max == 1:
		b.WriteByte('?')
	default:
		b.WriteString("{" + strconv.Itoa(r.min) + ",")
		if r.max >= 0 {
			b.WriteString(strconv.Itoa(r.max))
		}
		b.WriteByte('}')
	}
	return nil
}

func (a anchor) emit(b *strings.Builder, atEnd bool) error {
	switch {
	case a.kind == beginInput:
		b.WriteString(`\A`)
	case a.kind == endInput || atEnd:
		// Matched as a whole, "$" at the very end can only succeed at the end of input:
		// the line terminator it may stand before would be left unmatched.
		b.WriteString(`\z`)
	default:
		return &regexError{pos: a.pos, unsupported: true, msg: quoted(a.text) +
			` is supported only at the end of a pattern: elsewhere Java also matches it before a final line terminator, which Go's regexp cannot express`}
	}
	return nil
}

func (c class) emit(b *strings.Builder, _ bool) error {
	runeSet(c).emit(b)
	if b.Len() > maxExpression {
		return &regexError{pos: -1, unsupported: true, msg: "too large: its translation for Go's regexp exceeds 1 MiB"}
	}
	return nil
}
