package telemetry

import (
	"context"
	"sort"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/groupsync"
	"github.com/checkpointd/checkpointd/messages"
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
// cluster in CLIENT spans: `DescribeGroups`, `OffsetFetch <group>`,
// `Metadata` (partitions of topics) and `commit <group>` (the offset commit,
// messaging.operation.type=settle, with the outcome per partition counted by
// reason). The spans are children of the context the syncer passes, which is
// its run loop's: each attempt starts a trace. The commit span links to the
// span that wrote each checkpoint it commits (handlers.CommitLinks), as the
// messaging conventions ask of a batch.
func TraceTargetGroups(inner handlers.TargetGroups, tp trace.TracerProvider) handlers.TargetGroups {
	return tracedTarget{inner: inner, tracer: tp.Tracer(ScopeName)}
}

type tracedTarget struct {
	inner  handlers.TargetGroups
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

func (t tracedTarget) Describe(ctx context.Context, groups []string) (map[string]groupsync.TargetGroup, error) {
	attrs := []attribute.KeyValue{GroupCountKey.Int(len(groups))}
	if len(groups) == 1 {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(groups[0]))
	}
	ctx, span := t.start(ctx, "DescribeGroups", nil, attrs...)
	out, err := t.inner.Describe(ctx, groups)
	end(span, err)
	return out, err
}

func (t tracedTarget) Offsets(ctx context.Context, group string) (map[messages.TopicPartition]int64, error) {
	ctx, span := t.start(ctx, "OffsetFetch "+group, nil, semconv.MessagingConsumerGroupName(group))
	out, err := t.inner.Offsets(ctx, group)
	span.SetAttributes(semconv.MessagingBatchMessageCount(len(out)))
	end(span, err)
	return out, err
}

func (t tracedTarget) ExistingPartitions(ctx context.Context, topics []string) (map[messages.TopicPartition]bool, error) {
	ctx, span := t.start(ctx, "Metadata", nil, TopicCountKey.Int(len(topics)))
	out, err := t.inner.ExistingPartitions(ctx, topics)
	end(span, err)
	return out, err
}

func (t tracedTarget) Commit(ctx context.Context, group string, offsets map[messages.TopicPartition]groupsync.Checkpoint) (map[messages.TopicPartition]groupsync.Reason, error) {
	ctx, span := t.start(ctx, "commit "+group, handlers.CommitLinks(ctx),
		semconv.MessagingConsumerGroupName(group),
		semconv.MessagingOperationTypeSettle,
		semconv.MessagingOperationName("commit"),
		semconv.MessagingBatchMessageCount(len(offsets)))
	out, err := t.inner.Commit(ctx, group, offsets)
	counts := make(map[groupsync.Reason]int)
	for _, r := range out {
		counts[r]++
	}
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		span.SetAttributes(attribute.Int(ReasonKeyPrefix+r, counts[groupsync.Reason(r)]))
	}
	if err == nil && counts[groupsync.Committed] != len(offsets) {
		span.SetStatus(codes.Error, strconv.Itoa(len(offsets)-counts[groupsync.Committed])+" partitions not committed")
	}
	end(span, err)
	return out, err
}
