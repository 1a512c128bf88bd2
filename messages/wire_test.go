package messages_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

// Shared helpers for the codec tests.

// unhex decodes hex that may be spaced and split by "|" for readability,
// as the reference documents print it.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// field is one field of a record layout: its schema name and encoded size.
type field struct {
	name string
	size int
}

// str is the layout of a STRING field holding s.
func str(name, s string) field { return field{name, 2 + len(s)} }

// checkTruncations decodes every proper prefix of a valid encoding and wants
// ErrTruncated naming the field the cut falls in, at that field's offset.
func checkTruncations(t *testing.T, record string, valid []byte, layout []field, decode func([]byte) error) {
	t.Helper()
	total := 0
	for _, f := range layout {
		total += f.size
	}
	if total != len(valid) {
		t.Fatalf("%s: layout covers %d bytes, encoding has %d", record, total, len(valid))
	}
	start := 0
	for _, f := range layout {
		for cut := start; cut < start+f.size; cut++ {
			err := decode(valid[:cut:cut])
			wantDecodeError(t, err, record, f.name, start, messages.ErrTruncated)
		}
		start += f.size
	}
}

// wantDecodeError checks that err is a *DecodeError with these details.
func wantDecodeError(t *testing.T, err error, record, field string, offset int, cause error) {
	t.Helper()
	var de *messages.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("%s: got error %v, want a *DecodeError", record, err)
	}
	if de.Record != record || de.Field != field || de.Offset != offset || !errors.Is(err, cause) {
		t.Fatalf("got %q (record %q, field %q, offset %d), want record %q, field %q, offset %d, cause %v",
			err, de.Record, de.Field, de.Offset, record, field, offset, cause)
	}
}

// wantPanic checks that f panics, as encoders do for over-long strings.
func wantPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

var (
	maxASCII = strings.Repeat("x", messages.MaxStringLength)
	// maxUTF8 is MaxStringLength bytes of two-byte runes and one ASCII byte.
	maxUTF8   = strings.Repeat("é", messages.MaxStringLength/2) + "x"
	tooLong   = strings.Repeat("x", messages.MaxStringLength+1)
	multibyte = "grüße-日本-🚀" // 2-, 3- and 4-byte UTF-8
)

// brief prints v for a failure message, cut short: some cases hold 32 KiB strings.
func brief(v any) string {
	s := fmt.Sprintf("%#v", v) // not %v: the records' String hides fields
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// wantWellFormedError checks what fuzzing demands of a decode failure: a
// *DecodeError with a known cause, pointing inside the input.
func wantWellFormedError(t *testing.T, err error, key, value []byte) {
	t.Helper()
	var de *messages.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v is not a *DecodeError", err)
	}
	if de.Offset < 0 || de.Offset > max(len(key), len(value)) {
		t.Fatalf("error %v points outside the input", err)
	}
	for _, cause := range []error{messages.ErrTruncated, messages.ErrNegativeLength, messages.ErrUnsupportedVersion,
		messages.ErrStringTooLong, messages.ErrMalformed, messages.ErrTombstone} {
		if errors.Is(err, cause) {
			return
		}
	}
	t.Fatalf("error %v has no sentinel cause", err)
}

// nullable returns nil for a tombstone: fuzz inputs cannot be nil by themselves.
func nullable(b []byte, null bool) []byte {
	if null {
		return nil
	}
	return b
}
