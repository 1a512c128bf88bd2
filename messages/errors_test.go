package messages_test

import (
	"errors"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestDecodeErrorMessage(t *testing.T) {
	tests := []struct {
		name       string
		key, value []byte
		want       string
	}{
		{"field", unhex(t, "0001 67 0001 74 00000000"), unhex(t, "0000 0000000000000001 0000000000000002 0005 6d"),
			"decode checkpoint value: field metadata at byte 18: truncated"},
		{"version", unhex(t, "0001 67 0001 74 00000000"), unhex(t, "0007"),
			"decode checkpoint value: field version at byte 0: unsupported version 7"},
		{"whole value", unhex(t, "0001 67 0001 74 00000000"), nil,
			"decode checkpoint value: tombstone (null value)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := messages.DecodeCheckpoint(tt.key, tt.value)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDecodeErrorUnwrap(t *testing.T) {
	err := error(&messages.DecodeError{Record: "r", Field: "f", Err: messages.ErrTruncated})
	if !errors.Is(err, messages.ErrTruncated) || errors.Is(err, messages.ErrNegativeLength) {
		t.Errorf("errors.Is does not see the cause of %v", err)
	}
}
