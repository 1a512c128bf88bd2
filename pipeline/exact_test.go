package pipeline

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/handlers/exact"
	"github.com/checkpointd/checkpointd/infra/recordfetch"
)

// TestFetchFallback: a failed read names its reason by the error it wraps.
func TestFetchFallback(t *testing.T) {
	tests := []struct {
		err  error
		want exact.Reason
	}{
		{fmt.Errorf("fetch: %w", recordfetch.ErrReadDenied), exact.ReasonReadDenied},
		{fmt.Errorf("fetch: %w", recordfetch.ErrBudgetExceeded), exact.ReasonBudgetExceeded},
		{fmt.Errorf("fetch: %w", recordfetch.ErrOutOfRange), exact.ReasonTopicRecreated},
		{errors.New("connection reset"), exact.ReasonFetchFailed},
	}
	for _, tc := range tests {
		got := fetchFallback(tc.err)
		if got.Reason != tc.want || got.Downstream != -1 || got.Detail != tc.err.Error() || got.Exact() {
			t.Errorf("fetchFallback(%v) = %+v, want %s at -1 with the error", tc.err, got, tc.want)
		}
	}
}

// TestSummarize counts exact rows, fallbacks by reason and bytes.
func TestSummarize(t *testing.T) {
	rows := []ExactRow{
		{Exact: true, Bytes: 100},
		{Exact: true, Bytes: 0},
		{Reason: exact.ReasonCompacted, Bytes: 50},
		{Reason: exact.ReasonCompacted},
		{Reason: exact.ReasonNoCommit},
	}
	s := Summarize(rows, 1500*time.Millisecond)
	if s.Partitions != 5 || s.Exact != 2 || s.Bytes != 150 || s.Fallbacks[exact.ReasonCompacted] != 2 || s.Fallbacks[exact.ReasonNoCommit] != 1 {
		t.Fatalf("Summarize = %+v", s)
	}
	want := "exact: 2 of 5 partitions exact, 150 record bytes read, 1.5s in all; kept MM2's translation: compacted 2, no_commit 1"
	if got := s.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
