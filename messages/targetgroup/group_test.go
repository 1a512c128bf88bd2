package targetgroup

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestWritable(t *testing.T) {
	for _, tt := range []struct {
		name  string
		group Group
		want  bool
	}{
		{"empty", Group{State: StateEmpty}, true},
		{"not found", Group{State: StateNotFound}, true},
		{"stable", Group{State: "Stable", Members: 1}, false},
		{"rebalancing, no members yet", Group{State: "PreparingRebalance"}, false},
		{"empty with a member reported", Group{State: StateEmpty, Members: 1}, false},
		{"describe failed", Group{State: StateNotFound, DescribeErr: errors.New("coordinator not available")}, false},
	} {
		if got := tt.group.Writable(); got != tt.want {
			t.Errorf("%s: Writable() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCommitLinks(t *testing.T) {
	ctx := context.Background()
	if got := CommitLinks(WithCommitLinks(ctx, nil)); got != nil {
		t.Errorf("no links: got %v", got)
	}
	links := []trace.Link{{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})}}
	if got := CommitLinks(WithCommitLinks(ctx, links)); len(got) != 1 || got[0].SpanContext.TraceID() != links[0].SpanContext.TraceID() {
		t.Errorf("links: got %v, want %v", got, links)
	}
}

func TestReasonsAreDistinct(t *testing.T) {
	seen := make(map[Reason]bool)
	for _, r := range Reasons() {
		if r == "" || seen[r] {
			t.Errorf("reason %q is empty or listed twice", r)
		}
		seen[r] = true
	}
	if !seen[Committed] || !seen[CommitFailed] {
		t.Errorf("Reasons() misses committed or commit_failed: %v", Reasons())
	}
}
