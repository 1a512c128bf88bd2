package pipeline_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/infra/telemetry"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// discardPublisher counts what the outbox publishes.
type discardPublisher struct{ n atomic.Int64 }

func (p *discardPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.n.Add(int64(len(msgs)))
	return nil
}
func (p *discardPublisher) Close() error { return nil }

// BenchmarkTracingOverhead measures the translate stage's throughput with
// tracing off (no middleware, as the pipeline runs without WithTracing), on
// with every trace sampled, and on with 1% sampled. One op is two records
// through the handlers — an offset sync (index stage) and a source commit
// (translate stage) — which give one checkpoint, published by the Outbox to
// an in-memory publisher. Spans go through a batch processor to an exporter
// that drops them, so what is measured is checkpointd's and the SDK's cost,
// not an exporter's.
func BenchmarkTracingOverhead(b *testing.B) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	b.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	for _, bc := range []struct {
		name    string
		sampled float64 // <0: tracing off
	}{{"off", -1}, {"sampled=1.0", 1}, {"sampled=0.01", 0.01}} {
		b.Run(bc.name, func(b *testing.B) {
			var tp *sdktrace.TracerProvider
			if bc.sampled >= 0 {
				tp = sdktrace.NewTracerProvider(
					sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(bc.sampled))),
					sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			}
			benchTranslate(b, tp)
		})
	}
}

func benchTranslate(b *testing.B, tp *sdktrace.TracerProvider) {
	all, err := filter.New(".*", "")
	if err != nil {
		b.Fatal(err)
	}
	pub := &discardPublisher{}
	quiet := slog.New(slog.DiscardHandler)
	outbox := handlers.NewOutbox(pub, "source.checkpoints.internal", 1024, quiet)
	c, err := handlers.NewCheckpointer(handlers.CheckpointerConfig{
		SourceAlias: "source", TargetAlias: "target", Policy: messages.DefaultReplicationPolicy{},
		Topics: all, Groups: all, Emitter: outbox, Logger: quiet,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = outbox.Run(ctx, time.Second) }()
	defer func() { stop(); <-done }()

	wrap := func(h message.NoPublishHandlerFunc) message.HandlerFunc {
		f := func(msg *message.Message) ([]*message.Message, error) { return nil, h(msg) }
		if tp == nil {
			return f
		}
		return telemetry.Middleware(tp, nil, map[string]string{})(f)
	}
	index, translate := wrap(c.HandleOffsetSync), wrap(c.HandleSourceCommit)

	const syncs, commits = "mm2-offset-syncs.target.internal", "__consumer_offsets"
	tp0 := messages.TopicPartition{Topic: "orders", Partition: 0}
	commitKey := messages.EncodeOffsetCommitKey("g", tp0)
	for _, step := range []struct {
		h   message.HandlerFunc
		msg *message.Message
	}{
		{translate, envelope.NewControl(envelope.Assigned, commits, 0)},
		{translate, envelope.NewControl(envelope.CaughtUp, commits, 0)},
		{index, envelope.NewControl(envelope.CaughtUp, syncs, -1)},
	} {
		if _, err := step.h(step.msg); err != nil {
			b.Fatal(err)
		}
	}
	c.CheckpointsReadToEnd(context.Background())
	if !c.GateOpen() {
		b.Fatal("gate closed")
	}
	now := time.Now()
	record := func(topic string, offset int64, key, value []byte) *message.Message {
		msg := envelope.FromRecord(envelope.Record{Topic: topic, Offset: offset, Timestamp: now, Key: key, Value: value})
		msg.SetContext(context.Background())
		return msg
	}

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		off := int64(i + 1)
		s := messages.OffsetSync{TopicPartition: tp0, UpstreamOffset: off, DownstreamOffset: off}
		if _, err := index(record(syncs, off, s.Key(), s.Value())); err != nil {
			b.Fatal(err)
		}
		value, err := messages.EncodeOffsetCommitValue(3, messages.OffsetsRecord{Kind: messages.OffsetCommitRecord,
			Group: "g", TopicPartition: tp0, Offset: off, LeaderEpoch: -1, CommitTimestamp: now.UnixMilli()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := translate(record(commits, off, commitKey, value)); err != nil {
			b.Fatal(err)
		}
	}
	// Every op decides one checkpoint of the same key: the outbox writes it
	// or, when a newer one comes first, supersedes it.
	decided := func() int64 { st := outbox.Stats(); return st.Published + st.Superseded }
	for decided() < int64(b.N) || outbox.Len() > 0 {
		time.Sleep(50 * time.Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "records/s")
	if got := decided(); got != int64(b.N) || pub.n.Load() != outbox.Stats().Published {
		b.Fatalf("%d checkpoints written or superseded, want %d; %d published, outbox counted %d", got, b.N, pub.n.Load(), outbox.Stats().Published)
	}
}
