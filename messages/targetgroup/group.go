package targetgroup

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages"
)

// Group states that matter to the commit stage. Other states (Stable,
// PreparingRebalance, Assigning, Reconciling, Dead, ...) all mean "leave it".
const (
	StateEmpty    = "Empty"
	StateNotFound = "NotFound"
)

// Checkpoint is a group's translated position on one target partition.
type Checkpoint struct {
	Downstream int64  // the offset to commit on the target
	Upstream   int64  // the source commit it translates; -1 when unknown
	Metadata   string // the source commit's metadata, copied as MM2 does
}

// Group is what was learnt about a consumer group on the target.
type Group struct {
	State       string // StateEmpty, StateNotFound, or any other broker state
	Members     int
	DescribeErr error // non-nil: the describe failed and State means nothing
}

// Writable reports whether offsets may be committed into the group: it was
// described, has no members, and is Empty or does not exist yet.
func (g Group) Writable() bool {
	return g.DescribeErr == nil && g.Members == 0 && (g.State == StateEmpty || g.State == StateNotFound)
}

// Groups is what the commit stage needs from the target cluster. Its batch
// calls answer for many groups or topics at once, so that a round costs a few
// requests per coordinator instead of a few per group.
type Groups interface {
	// Describe reports each group's state; a group that failed to describe
	// has DescribeErr set (never "not found").
	Describe(ctx context.Context, groups []string) (map[string]Group, error)
	// Offsets returns the committed offsets on the target of each of groups
	// (an empty map for a group without any); a group whose offsets could not
	// be read is in the second map instead. A group in neither is taken as
	// unreadable: not knowing its offsets, the syncer could lower them.
	Offsets(ctx context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error)
	// ExistingPartitions reports which partitions of topics exist; a topic
	// that could not be looked up is in the second map.
	ExistingPartitions(ctx context.Context, topics []string) (map[messages.TopicPartition]bool, map[string]error)
	// Commit writes offsets into the group as a simple (memberless) commit
	// and reports the outcome of every partition. It is called for several
	// groups at once.
	Commit(ctx context.Context, group string, offsets map[messages.TopicPartition]Checkpoint) (map[messages.TopicPartition]Reason, error)
}

// commitLinksKey carries, in the context of a Groups.Commit call, the span
// contexts of the checkpoint records the commit covers.
type commitLinksKey struct{}

// CommitLinks returns the links to the checkpoint records a Groups.Commit
// call covers, as the commit stage put them in ctx: one per checkpoint that
// carried a W3C trace context (checkpoints written by MM2 carry none). A
// tracing Groups passes them to its commit span.
func CommitLinks(ctx context.Context) []trace.Link {
	links, _ := ctx.Value(commitLinksKey{}).([]trace.Link)
	return links
}

// WithCommitLinks returns ctx carrying links for CommitLinks.
func WithCommitLinks(ctx context.Context, links []trace.Link) context.Context {
	if len(links) == 0 {
		return ctx
	}
	return context.WithValue(ctx, commitLinksKey{}, links)
}

// beforeSendKey is the context key of WithBeforeSend's check.
type beforeSendKey struct{}

// WithBeforeSend returns ctx carrying check, which a writer to the target
// calls right before its request leaves: a Groups.Commit after waiting for
// a connection and before each retry (an error stops the commit, its
// partitions then Retriable), the checkpoint publisher with the first
// record's context before it hands the records to its producer. The commit
// stage and the outbox confirm there that they still own the shards, so a
// process paused while its write waited sends nothing on a confirmation
// from before the pause.
func WithBeforeSend(ctx context.Context, check func(context.Context) error) context.Context {
	return context.WithValue(ctx, beforeSendKey{}, check)
}

// CheckBeforeSend runs the check WithBeforeSend put in ctx, if any.
func CheckBeforeSend(ctx context.Context) error {
	if check, ok := ctx.Value(beforeSendKey{}).(func(context.Context) error); ok {
		return check(ctx)
	}
	return nil
}
