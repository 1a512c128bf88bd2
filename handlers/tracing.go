package handlers

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages"
)

// Attribute keys and event names the handlers put on the span of the context
// they are given (the `process <topic>` span of infra/telemetry's
// middleware). Without tracing that span is a no-op and nothing is recorded.
const (
	// DecisionEvent is the event added for every (group, partition) a
	// handler decides: emitted or skipped, and why.
	DecisionEvent = "checkpoint.decision"

	DecisionKey         = attribute.Key("checkpointd.decision") // emitted or skipped
	ReasonKey           = attribute.Key("checkpointd.reason")   // the skip reason code (translate.Reason)
	GroupKey            = attribute.Key("checkpointd.group")    // the source consumer group decided
	UpstreamTopicKey    = attribute.Key("checkpointd.upstream.topic")
	DownstreamTopicKey  = attribute.Key("checkpointd.downstream.topic")
	PartitionKey        = attribute.Key("checkpointd.partition")
	UpstreamOffsetKey   = attribute.Key("checkpointd.upstream.offset")
	DownstreamOffsetKey = attribute.Key("checkpointd.downstream.offset")
	// DecisionsKey counts the decisions a span holds as events.
	DecisionsKey = attribute.Key("checkpointd.decisions")
	// SupersededKey marks a send span whose checkpoint was replaced by a
	// newer one of the same key before it was written.
	SupersededKey = attribute.Key("checkpointd.superseded")
)

// Decision values.
const (
	DecisionEmitted = "emitted"
	DecisionSkipped = "skipped"
	// DecisionDeferred: a newer offset sync may move the group's
	// translation; it is decided at the next refresh (see
	// CheckpointerConfig.RefreshInterval), in a `decide` span that is a
	// child of this one.
	DecisionDeferred = "deferred"
)

// recordDecision adds a DecisionEvent to the span in ctx. It costs a branch
// when the span is not recording (tracing off or not sampled).
func recordDecision(ctx context.Context, group string, tp, renamed messages.TopicPartition, decision, reason string, upstream, downstream int64) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		addDecisionEvent(span, group, tp, renamed, decision, reason, upstream, downstream)
	}
}

// addDecisionEvent is recordDecision's recording half, out of line: its
// attribute array makes a frame big enough that, inlined, it grew the stack
// of every Watermill handler goroutine (one per message) even with tracing
// off.
//
//go:noinline
func addDecisionEvent(span trace.Span, group string, tp, renamed messages.TopicPartition, decision, reason string, upstream, downstream int64) {
	attrs := []attribute.KeyValue{
		DecisionKey.String(decision),
		GroupKey.String(group),
		UpstreamTopicKey.String(tp.Topic),
		PartitionKey.Int(int(tp.Partition)),
		UpstreamOffsetKey.Int64(upstream),
	}
	if reason != "" {
		attrs = append(attrs, ReasonKey.String(reason))
	}
	if decision == DecisionEmitted {
		attrs = append(attrs, DownstreamTopicKey.String(renamed.Topic), DownstreamOffsetKey.Int64(downstream))
	}
	span.AddEvent(DecisionEvent, trace.WithAttributes(attrs...))
}
