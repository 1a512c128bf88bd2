package telemetry

import (
	"context"
	"sort"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Attribute keys of the commit stage's admin spans.
const (
	GroupCountKey = attribute.Key("checkpointd.group.count")
	TopicCountKey = attribute.Key("checkpointd.topic.count")
	// ReasonKeyPrefix + a groupsync reason counts the partitions with that
	// outcome of a commit, e.g. checkpointd.partitions.committed=3.
	ReasonKeyPrefix = "checkpointd.partitions."
)

// TraceTargetGroups wraps the commit stage's admin calls on the target
// cluster in CLIENT spans, one per call: `DescribeGroups` and `OffsetFetch`
// (each over a batch of groups, checkpointd.group.count of them), `Metadata`
// (partitions of topics, answered from a cache when fresh) and
// `commit <group>` (the offset commit,
// messaging.operation.type=settle, with the outcome per partition counted by
// reason). The spans are children of the context the syncer passes, which is
// its run loop's: each attempt starts a trace. The commit span links to the
// span that wrote each checkpoint it commits (targetgroup.CommitLinks), as the
// messaging conventions ask of a batch.
func TraceTargetGroups(inner targetgroup.Groups, tp trace.TracerProvider) targetgroup.Groups {
	return tracedTarget{inner: inner, tracer: tp.Tracer(messages.TracerScope)}
}

type tracedTarget struct {
	inner  targetgroup.Groups
	tracer trace.Tracer
}

func (t tracedTarget) start(ctx context.Context, name string, links []trace.Link, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...),
		trace.WithAttributes(append([]attribute.KeyValue{semconv.MessagingSystemKafka}, attrs...)...))
}

func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (t tracedTarget) Describe(ctx context.Context, groups []string) (map[string]targetgroup.Group, error) {
	ctx, span := t.start(ctx, "DescribeGroups", nil, groupAttrs(groups)...)
	out, err := t.inner.Describe(ctx, groups)
	end(span, err)
	return out, err
}

func (t tracedTarget) Offsets(ctx context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	ctx, span := t.start(ctx, "OffsetFetch", nil, groupAttrs(groups)...)
	out, failed := t.inner.Offsets(ctx, groups)
	partitions := 0
	for _, offs := range out {
		partitions += len(offs)
	}
	span.SetAttributes(semconv.MessagingBatchMessageCount(partitions))
	endBatch(span, "groups", failed)
	return out, failed
}

func (t tracedTarget) ExistingPartitions(ctx context.Context, topics []string) (map[messages.TopicPartition]bool, map[string]error) {
	ctx, span := t.start(ctx, "Metadata", nil, TopicCountKey.Int(len(topics)))
	out, failed := t.inner.ExistingPartitions(ctx, topics)
	endBatch(span, "topics", failed)
	return out, failed
}

// groupAttrs counts the groups of a batch call, and names the group of a
// batch of one.
func groupAttrs(groups []string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{GroupCountKey.Int(len(groups))}
	if len(groups) == 1 {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(groups[0]))
	}
	return attrs
}

// endBatch ends the span of a batch call: failed in part or as a whole, it
// says how many of what failed and records the first failure in key order
// (one error event, not hundreds when a coordinator is down).
func endBatch(span trace.Span, what string, failed map[string]error) {
	if len(failed) == 0 {
		span.End()
		return
	}
	keys := make([]string, 0, len(failed))
	for k := range failed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	span.RecordError(failed[keys[0]])
	span.SetStatus(codes.Error, what+" failed: "+strconv.Itoa(len(failed)))
	span.End()
}

func (t tracedTarget) Commit(ctx context.Context, group string, offsets map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	ctx, span := t.start(ctx, "commit "+group, targetgroup.CommitLinks(ctx),
		semconv.MessagingConsumerGroupName(group),
		semconv.MessagingOperationTypeSettle,
		semconv.MessagingOperationName("commit"),
		semconv.MessagingBatchMessageCount(len(offsets)))
	out, err := t.inner.Commit(ctx, group, offsets)
	counts := make(map[targetgroup.Reason]int)
	for _, r := range out {
		counts[r]++
	}
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		span.SetAttributes(attribute.Int(ReasonKeyPrefix+r, counts[targetgroup.Reason(r)]))
	}
	if err == nil && counts[targetgroup.Committed] != len(offsets) {
		span.SetStatus(codes.Error, strconv.Itoa(len(offsets)-counts[targetgroup.Committed])+" partitions not committed")
	}
	end(span, err)
	return out, err
}
