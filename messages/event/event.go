package event

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Kind tells the event types apart without reflection; its String is the
// stable name forwarders write into message metadata.
type Kind uint8

const (
	KindSourceCommitRead Kind = iota + 1
	KindOffsetSyncApplied
	KindCheckpointDecided
	KindCheckpointWritten
	KindTargetCommitResult
	kindEnd // one past the last kind
)

// Kinds lists every kind, in pipeline order.
func Kinds() []Kind {
	out := make([]Kind, 0, kindEnd-1)
	for k := KindSourceCommitRead; k < kindEnd; k++ {
		out = append(out, k)
	}
	return out
}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return k >= KindSourceCommitRead && k < kindEnd }

func (k Kind) String() string {
	switch k {
	case KindSourceCommitRead:
		return "source_commit_read"
	case KindOffsetSyncApplied:
		return "offset_sync_applied"
	case KindCheckpointDecided:
		return "checkpoint_decided"
	case KindCheckpointWritten:
		return "checkpoint_written"
	case KindTargetCommitResult:
		return "target_commit_result"
	}
	return "unknown"
}

// Event is one of the types below.
type Event interface {
	Kind() Kind
	// SpanContext is the trace context of the hop that produced the event;
	// invalid when it was not traced.
	SpanContext() trace.SpanContext
	// SourceGroup is the source consumer group the event is about; empty
	// for an offset sync, which is about a partition.
	SourceGroup() string
}

// SourceCommitRead: a source group's commit (or its deletion) was read from
// __consumer_offsets or the admin poll, on the instance that owns the group.
type SourceCommitRead struct {
	Group       string            `json:"group"`
	Topic       string            `json:"topic"`
	Partition   int32             `json:"partition"`
	Offset      int64             `json:"offset"`
	Metadata    string            `json:"metadata,omitempty"`
	Deleted     bool              `json:"deleted,omitempty"` // a tombstone: the group's offset for the partition is gone
	CommittedAt time.Time         `json:"committed_at"`
	Trace       trace.SpanContext `json:"-"`
}

// OffsetSyncApplied: an offset sync was read and given to the translation
// index (every instance reads every sync).
type OffsetSyncApplied struct {
	Topic            string            `json:"topic"`
	Partition        int32             `json:"partition"`
	UpstreamOffset   int64             `json:"upstream_offset"`
	DownstreamOffset int64             `json:"downstream_offset"`
	Trace            trace.SpanContext `json:"-"`
}

// CheckpointDecided: a (group, upstream partition) was decided. Emitted
// says whether a checkpoint was queued for the target; if not, Reason says
// why and the downstream fields are empty.
type CheckpointDecided struct {
	Group            string              `json:"group"`
	Topic            string              `json:"topic"` // upstream
	Partition        int32               `json:"partition"`
	Emitted          bool                `json:"emitted"`
	Reason           messages.SkipReason `json:"reason"`
	UpstreamOffset   int64               `json:"upstream_offset"`            // -1 when the group has none
	DownstreamTopic  string              `json:"downstream_topic,omitempty"` // the topic's name on the target
	DownstreamOffset int64               `json:"downstream_offset"`          // -1 when skipped
	Metadata         string              `json:"metadata,omitempty"`
	CommittedAt      time.Time           `json:"committed_at,omitzero"` // when the source commit was written
	Trace            trace.SpanContext   `json:"-"`
}

// CheckpointWritten: the target acknowledged a checkpoint record that this
// instance wrote to the checkpoints topic (MM2's format; Topic is the
// partition's name on the target).
type CheckpointWritten struct {
	Group            string            `json:"group"`
	Topic            string            `json:"topic"`
	Partition        int32             `json:"partition"`
	UpstreamOffset   int64             `json:"upstream_offset"`
	DownstreamOffset int64             `json:"downstream_offset"`
	Metadata         string            `json:"metadata,omitempty"`
	CommittedAt      time.Time         `json:"committed_at,omitzero"`
	Trace            trace.SpanContext `json:"-"`
}

// TargetCommitResult: the commit stage tried one (group, target partition).
// TargetGroup is the group the offset went to, which a checkpoint policy
// may have renamed (pipeline.WithCheckpointPolicy); Group is the source's.
type TargetCommitResult struct {
	Group        string             `json:"group"`
	TargetGroup  string             `json:"target_group"`
	Topic        string             `json:"topic"` // on the target
	Partition    int32              `json:"partition"`
	Reason       targetgroup.Reason `json:"reason"`
	CheckpointAt time.Time          `json:"checkpoint_at,omitzero"` // the checkpoint record's timestamp
	CommittedAt  time.Time          `json:"committed_at,omitzero"`  // the source commit behind it; zero for MM2's
	Trace        trace.SpanContext  `json:"-"`
}

func (SourceCommitRead) Kind() Kind   { return KindSourceCommitRead }
func (OffsetSyncApplied) Kind() Kind  { return KindOffsetSyncApplied }
func (CheckpointDecided) Kind() Kind  { return KindCheckpointDecided }
func (CheckpointWritten) Kind() Kind  { return KindCheckpointWritten }
func (TargetCommitResult) Kind() Kind { return KindTargetCommitResult }

func (e SourceCommitRead) SpanContext() trace.SpanContext   { return e.Trace }
func (e OffsetSyncApplied) SpanContext() trace.SpanContext  { return e.Trace }
func (e CheckpointDecided) SpanContext() trace.SpanContext  { return e.Trace }
func (e CheckpointWritten) SpanContext() trace.SpanContext  { return e.Trace }
func (e TargetCommitResult) SpanContext() trace.SpanContext { return e.Trace }

func (e SourceCommitRead) SourceGroup() string   { return e.Group }
func (OffsetSyncApplied) SourceGroup() string    { return "" }
func (e CheckpointDecided) SourceGroup() string  { return e.Group }
func (e CheckpointWritten) SourceGroup() string  { return e.Group }
func (e TargetCommitResult) SourceGroup() string { return e.Group }
