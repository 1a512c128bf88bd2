package telemetry

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

type fakeTarget struct{ describeErr error }

func (f fakeTarget) Describe(_ context.Context, groups []string) (map[string]targetgroup.Group, error) {
	return nil, f.describeErr
}

// Offsets has two offsets for every group but "locked", which it may not read.
func (fakeTarget) Offsets(_ context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	out, failed := map[string]map[messages.TopicPartition]int64{}, map[string]error{}
	for _, g := range groups {
		if g == "locked" {
			failed[g] = errors.New("GROUP_AUTHORIZATION_FAILED")
			continue
		}
		out[g] = map[messages.TopicPartition]int64{{Topic: "t", Partition: 0}: 5, {Topic: "t", Partition: 1}: 6}
	}
	return out, failed
}
func (fakeTarget) ExistingPartitions(context.Context, []string) (map[messages.TopicPartition]bool, map[string]error) {
	return nil, nil
}
func (fakeTarget) Commit(_ context.Context, _ string, offsets map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	out := make(map[messages.TopicPartition]targetgroup.Reason)
	for tp := range offsets {
		out[tp] = targetgroup.Committed
		if tp.Partition == 1 {
			out[tp] = targetgroup.TargetTopicMissing
		}
	}
	return out, nil
}

func TestTraceTargetGroups(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	target := TraceTargetGroups(fakeTarget{describeErr: errors.New("coordinator not available")}, tp)
	ctx := context.Background()
	if _, err := target.Describe(ctx, []string{"g"}); err == nil {
		t.Fatal("describe error lost")
	}
	_, _ = target.Offsets(ctx, []string{"g", "h", "locked"})
	_, _ = target.ExistingPartitions(ctx, []string{"t"})
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	_, _ = target.Commit(targetgroup.WithCommitLinks(ctx, []trace.Link{{SpanContext: linked}}), "g", map[messages.TopicPartition]targetgroup.Checkpoint{
		{Topic: "t", Partition: 0}: {Downstream: 3}, {Topic: "t", Partition: 1}: {Downstream: 4}, {Topic: "t", Partition: 2}: {Downstream: 5},
	})
	spans := rec.Ended()
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s: kind %v, want client", s.Name(), s.SpanKind())
		}
	}
	if want := []string{"DescribeGroups", "OffsetFetch", "Metadata", "commit g"}; len(names) != 4 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] || names[3] != want[3] {
		t.Fatalf("spans %v, want %v", names, want)
	}
	if spans[0].Status().Code.String() != "Error" {
		t.Errorf("failed describe: status %v", spans[0].Status())
	}
	fetch := attrMap(spans[1].Attributes())
	for k, want := range map[string]string{
		"checkpointd.group.count":       "3",
		"messaging.batch.message_count": "4",
	} {
		if fetch[k] != want {
			t.Errorf("offset fetch span %s = %q, want %q", k, fetch[k], want)
		}
	}
	if _, ok := fetch["messaging.consumer.group.name"]; ok {
		t.Error("a fetch over three groups names one of them")
	}
	if st := spans[1].Status(); st.Code.String() != "Error" || st.Description != "groups failed: 1" {
		t.Errorf("fetch with one group failed: status %v, want Error \"groups failed: 1\"", st)
	}
	if spans[2].Status().Code.String() == "Error" {
		t.Errorf("metadata without failures: status %v", spans[2].Status())
	}
	attrs := attrMap(spans[3].Attributes())
	for k, want := range map[string]string{
		"messaging.system":                            "kafka",
		"messaging.consumer.group.name":               "g",
		"messaging.operation.type":                    "settle",
		"messaging.batch.message_count":               "3",
		"checkpointd.partitions.committed":            "2",
		"checkpointd.partitions.target_topic_missing": "1",
	} {
		if attrs[k] != want {
			t.Errorf("commit span %s = %q, want %q", k, attrs[k], want)
		}
	}
	if links := spans[3].Links(); len(links) != 1 || !links[0].SpanContext.Equal(linked) {
		t.Errorf("commit span links %v, want the checkpoint's span %s", links, linked.SpanID())
	}
	for _, s := range spans[:3] {
		if len(s.Links()) != 0 {
			t.Errorf("%s: links %v, want none", s.Name(), s.Links())
		}
	}
	if spans[3].Status().Code.String() != "Error" {
		t.Errorf("partly failed commit: status %v, want Error", spans[3].Status())
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}
