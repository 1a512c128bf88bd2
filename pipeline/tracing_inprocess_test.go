package pipeline_test

// The translate stage and the telemetry middleware together, in process: how
// a source commit's trace reaches the checkpoint record it leads to.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/infra/telemetry"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// capture is a Publisher that keeps what it is given.
type capture struct {
	mu   sync.Mutex
	msgs []*message.Message
}

func (c *capture) Publish(_ string, msgs ...*message.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msgs...)
	return nil
}
func (c *capture) Close() error { return nil }

func (c *capture) wait(t *testing.T, n int) []*message.Message {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		got := append([]*message.Message(nil), c.msgs...)
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d checkpoints published, want %d", len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// TestCheckpointCarriesSendSpan runs a real Checkpointer and Outbox behind
// the middleware: the checkpoint a source commit leads to is published with
// the traceparent of its `send` span, child of the commit's `process
// __consumer_offsets` span, which is the child of the context the commit
// record carried.
func TestCheckpointCarriesSendSpan(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())

	pub := &capture{}
	outbox := handlers.NewOutbox(pub, "source.checkpoints.internal", 16, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go outbox.Run(ctx, time.Second)

	all, _ := filter.New(".*", "")
	c, err := handlers.NewCheckpointer(handlers.CheckpointerConfig{
		SourceAlias: "source", TargetAlias: "target", Policy: messages.DefaultReplicationPolicy{},
		Topics: all, Groups: all, Emitter: outbox,
	})
	if err != nil {
		t.Fatal(err)
	}
	const co = "__consumer_offsets"
	// One handler, as the router names it, dispatching like the pipeline's
	// three: messages of one subscriber arrive in order.
	dispatch := func(m *message.Message) error {
		switch m.Metadata.Get(envelope.MetaTopic) {
		case "source.checkpoints.internal":
			return c.HandleCheckpointRecord(m)
		case "mm2-offset-syncs.target.internal":
			return c.HandleOffsetSync(m)
		default:
			return c.HandleSourceCommit(m)
		}
	}
	handled := make(chan error, 16)
	in := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	router.AddMiddleware(telemetry.Middleware(tp, nil, map[string]string{"translate_commits": "checkpointd"}))
	router.AddConsumerHandler("translate_commits", "in", in, func(m *message.Message) error {
		err := dispatch(m)
		handled <- err
		return nil
	})
	go router.Run(ctx)
	<-router.Running()
	run := func(msg *message.Message) {
		t.Helper()
		if err := in.Publish("in", msg); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-handled:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("message not handled")
		}
	}
	orders0 := messages.TopicPartition{Topic: "orders", Partition: 0}
	sync := messages.OffsetSync{TopicPartition: orders0, UpstreamOffset: 7, DownstreamOffset: 3}
	run(envelope.NewControl(envelope.CaughtUp, "source.checkpoints.internal", -1))
	run(envelope.FromRecord(envelope.Record{Topic: "mm2-offset-syncs.target.internal", Key: sync.Key(), Value: sync.Value()}))
	run(envelope.NewControl(envelope.CaughtUp, "mm2-offset-syncs.target.internal", -1))
	run(envelope.NewControl(envelope.Assigned, co, 2))
	run(envelope.NewControl(envelope.CaughtUp, co, 2))

	// A live commit that arrives with trace context in its headers.
	commit := messages.OffsetsRecord{Kind: messages.OffsetCommitRecord, Group: "g", TopicPartition: orders0, Offset: 7, LeaderEpoch: -1}
	val, err := messages.EncodeOffsetCommitValue(3, commit)
	if err != nil {
		t.Fatal(err)
	}
	upstream := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	msg := envelope.FromRecord(envelope.Record{Topic: co, Partition: 2, Offset: 41, Key: messages.EncodeOffsetCommitKey("g", orders0), Value: val,
		Headers: map[string]string{}})
	otel.GetTextMapPropagator().Inject(trace.ContextWithRemoteSpanContext(context.Background(), upstream), propagation.MapCarrier(msg.Metadata))
	run(msg)

	published := pub.wait(t, 1)
	// The process span ends after the handler returns, the send span when
	// the publish is acknowledged: both may end a moment after the above.
	var process, send sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(5 * time.Second); (process == nil || send == nil) && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "process " + co:
				process = s
			case "send source.checkpoints.internal":
				send = s
			}
		}
	}
	if process == nil || send == nil {
		t.Fatalf("no `process %s` or `send source.checkpoints.internal` span among %d ended spans", co, len(rec.Ended()))
	}
	if got := len(rec.Ended()); got != 3 {
		t.Errorf("%d spans ended, want 3 (the sync, the commit and the checkpoint's send; control messages are not traced)", got)
	}
	if send.Parent().SpanID() != process.SpanContext().SpanID() || send.SpanKind() != trace.SpanKindProducer {
		t.Errorf("send span (%v) parent %s, want a producer span, child of the process span %s", send.SpanKind(), send.Parent().SpanID(), process.SpanContext().SpanID())
	}
	if process.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("span kind %v, want consumer", process.SpanKind())
	}
	if process.Parent().SpanID() != upstream.SpanID() || process.SpanContext().TraceID() != upstream.TraceID() {
		t.Errorf("process span parent %v, want the record's context %v", process.Parent(), upstream)
	}
	attrs := attrMap(process.Attributes())
	for k, want := range map[string]string{
		"messaging.system":                   "kafka",
		"messaging.operation.type":           "process",
		"messaging.operation.name":           "process",
		"messaging.destination.name":         co,
		"messaging.destination.partition.id": "2",
		"messaging.kafka.offset":             "41",
		"messaging.consumer.group.name":      "checkpointd",
		"checkpointd.handler":                "translate_commits",
	} {
		if attrs[k] != want {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], want)
		}
	}

	// The checkpoint carries its send span's context.
	got := otel.GetTextMapPropagator().Extract(context.Background(), propagation.MapCarrier(published[0].Metadata))
	sc := trace.SpanContextFromContext(got)
	if sc.TraceID() != upstream.TraceID() || sc.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("checkpoint traceparent %q: trace %s span %s, want trace %s span %s (the send span)",
			published[0].Metadata.Get("traceparent"), sc.TraceID(), sc.SpanID(), upstream.TraceID(), send.SpanContext().SpanID())
	}
}
