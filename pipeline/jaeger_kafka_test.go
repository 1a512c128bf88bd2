package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/infra/telemetry/otlp"
	"github.com/checkpointd/checkpointd/internal/testbed/jaegertest"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/pipeline"
)

// TestTracesInJaeger follows one source commit through every hop in a real
// Jaeger, with tracing set up as `checkpointd run` does it: from OTEL_*
// variables, exported over OTLP/HTTP. It reads the trace back from Jaeger's
// query API and checks it span by span:
//
//	process __consumer_offsets (consumer: the commit record)
//	  [decide (internal), when the commit arrived during the start-up replay]
//	    send <checkpoints> (producer: the checkpoint record; its traceparent)
//	      process <checkpoints> (consumer: the commit stage)
//	commit <group> (client: the target commit), linked to the send span
//
// and that an offset sync arriving later re-decides the group in the span of
// the sync record (`process <offset syncs>`, holding the decision event).
func TestTracesInJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	bed := kafkatest.Shared(t)
	f := newFixture(t, bed, map[string]int32{"jaeger": 1})
	topic := f.topics["jaeger"]
	group := kafkatest.UniqueName(t, "grp")
	service := kafkatest.UniqueName(t, "checkpointd")
	cfg := loadConfig(t, writeConfig(t, "jaeger.yaml", f.props(t, []string{group}, "offsets-log")))

	// As an operator would configure it; batches flushed every 100 ms.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", j.OTLPEndpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", service)
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
	tracing, err := otlp.Setup(t.Context(), otlp.Options{ServiceVersion: "test"})
	if err != nil {
		t.Fatalf("tracing setup: %v", err)
	}
	if !tracing.Enabled() {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}

	in := startWithOptions(t, f, "jaeger", cfg, func(*pipeline.Pipeline) {}, pipeline.WithTracing(tracing.TracerProvider()))
	f.produce(t, "jaeger", 20, 10)
	ends, _ := f.settle(t, "jaeger", in)
	f.commit(t, group, topic, ends, make(map[int32][]int64))
	cps := f.waitCheckpoints(t, group, topic, ends)
	f.waitTargetFollows(t, group, cps)
	// The group commits ahead of what MM2 has mirrored (a consumer faster
	// than MM2), then more records come, so MM2 writes a newer offset sync
	// at or below the group's offset, which re-decides it. A sync above
	// the group's offset could not move it and would not decide it.
	ahead := make(map[int32]int64, len(ends))
	for p, o := range ends {
		ahead[p] = o + 11
	}
	in.obs.forget(group)
	f.commit(t, group, topic, ahead, make(map[int32][]int64))
	// The commit must be decided before the newer sync exists: the source
	// reader waits up to 100 ms to gather commits, and a sync that arrived
	// first would be part of the commit's own decision, leaving the sync
	// nothing to re-decide. (The commit is ahead of every sync so far, so
	// it translates to what is checkpointed already: a skip.)
	f.waitFor(t, waitTimeout, "the commit ahead to be decided", func() error {
		for p := range ahead {
			if _, ok := in.obs.outcome(group, p); !ok {
				return fmt.Errorf("partition %d not decided yet", p)
			}
		}
		return nil
	})
	f.produce(t, "jaeger", 20, 11)
	f.settle(t, "jaeger", in)
	f.stop(t, in)
	flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tracing.Shutdown(flushCtx); err != nil {
		t.Fatalf("flush spans to jaeger: %v", err)
	}

	cp := cps[0]
	carrier := propagation.MapCarrier{}
	for _, h := range cp.rec.Headers {
		carrier[string(h.Key)] = string(h.Value)
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(t.Context(), carrier))
	if !sc.IsValid() {
		t.Fatalf("checkpoint %v has no trace context; headers %v", cp.Checkpoint, carrier)
	}
	traceID, sendID := sc.TraceID().String(), sc.SpanID().String()

	// Jaeger stores asynchronously: poll until every hop is there.
	var chain struct{ consumed, decided, sent, committed, commitCall, resync jaegertest.Span }
	f.waitFor(t, waitTimeout, "the checkpoint's trace in jaeger", func() error {
		tr, err := j.Trace(t.Context(), traceID)
		if errors.Is(err, jaegertest.ErrTraceNotFound) {
			return err
		}
		if err != nil {
			t.Fatalf("jaeger query: %v", err)
		}
		byID := map[string]jaegertest.Span{}
		for _, s := range tr.Spans {
			byID[s.SpanID] = s
		}
		var ok bool
		if chain.sent, ok = byID[sendID]; !ok {
			return fmt.Errorf("trace %s has %d spans, not yet the send span %s", traceID, len(tr.Spans), sendID)
		}
		if chain.decided, ok = byID[parentOf(chain.sent)]; !ok {
			return fmt.Errorf("send span's parent %q not in the trace yet", parentOf(chain.sent))
		}
		chain.consumed = chain.decided
		if chain.decided.OperationName == "decide" {
			if chain.consumed, ok = byID[parentOf(chain.decided)]; !ok {
				return fmt.Errorf("decide span's parent %q not in the trace yet", parentOf(chain.decided))
			}
		}
		// The record has two readers on this instance, each with its own
		// child span: the restore of previous checkpoints and the commit
		// stage. The chain goes on through the commit stage.
		chain.committed = jaegertest.Span{}
		for _, s := range tr.Spans {
			handler, _ := s.Tag("checkpointd.handler")
			if s.Ref(jaegertest.ChildOf, traceID, sendID) && s.OperationName == "process "+bed.CheckpointsTopic() && handler == "sync_target_offsets" {
				chain.committed = s
			}
		}
		if chain.committed.SpanID == "" {
			return errors.New("no commit-stage span under the send span yet")
		}
		// The target commit and the re-decision are in traces of their own.
		traces, err := j.Traces(t.Context(), service)
		if err != nil {
			t.Fatalf("jaeger query: %v", err)
		}
		chain.commitCall, chain.resync = jaegertest.Span{}, jaegertest.Span{}
		for _, tr := range traces {
			for _, s := range tr.Spans {
				switch {
				case s.OperationName == "commit "+group && s.Ref(jaegertest.FollowsFrom, traceID, sendID):
					chain.commitCall = s
				case s.OperationName == "process "+bed.OffsetSyncsTopic() && len(decisionsOf(s, group)) > 0 && s.StartTime > chain.sent.StartTime:
					chain.resync = s
				}
			}
		}
		switch {
		case chain.commitCall.SpanID == "":
			return fmt.Errorf("no `commit %s` span linking to the send span among %d traces", group, len(traces))
		case chain.resync.SpanID == "":
			return fmt.Errorf("no later `process %s` span deciding %s among %d traces", bed.OffsetSyncsTopic(), group, len(traces))
		}
		return nil
	})

	c := chain
	checkSpan(t, "source commit", c.consumed, "process __consumer_offsets", "consumer", map[string]string{
		"messaging.system":              "kafka",
		"messaging.operation.type":      "process",
		"messaging.destination.name":    "__consumer_offsets",
		"messaging.consumer.group.name": cfg.GroupID,
		"checkpointd.handler":           "translate_commits",
		"checkpointd.group":             group,
		"checkpointd.upstream.topic":    topic,
		"checkpointd.upstream.offset":   strconv.FormatInt(cp.UpstreamOffset, 10),
	})
	for _, k := range []string{"messaging.destination.partition.id", "messaging.kafka.offset"} {
		if _, ok := c.consumed.Tag(k); !ok {
			t.Errorf("source commit span lacks %s: %v", k, c.consumed.TagMap())
		}
	}
	if c.decided.SpanID != c.consumed.SpanID {
		checkSpan(t, "late decision", c.decided, "decide", "internal", map[string]string{"checkpointd.group": group})
		if !c.decided.Ref(jaegertest.ChildOf, traceID, c.consumed.SpanID) {
			t.Errorf("decide span is not the child of the commit's span: %v", c.decided.References)
		}
	}
	decisions := decisionsOf(c.decided, group)
	if len(decisions) != 1 {
		t.Fatalf("%d decision events for %s on %q, want 1: %v", len(decisions), group, c.decided.OperationName, c.decided.Logs)
	}
	for k, want := range map[string]string{
		"checkpointd.decision":          handlers.DecisionEmitted,
		"checkpointd.upstream.offset":   strconv.FormatInt(cp.UpstreamOffset, 10),
		"checkpointd.downstream.topic":  cp.TopicPartition.Topic,
		"checkpointd.downstream.offset": strconv.FormatInt(cp.DownstreamOffset, 10),
	} {
		if got := decisions[0][k]; got != want {
			t.Errorf("decision event %s = %q, want %q (%v)", k, got, want, decisions[0])
		}
	}
	checkSpan(t, "checkpoint publish", c.sent, "send "+bed.CheckpointsTopic(), "producer", map[string]string{
		"messaging.system":                   "kafka",
		"messaging.operation.type":           "send",
		"messaging.destination.name":         bed.CheckpointsTopic(),
		"messaging.destination.partition.id": "0",
		"checkpointd.group":                  group,
		"checkpointd.downstream.topic":       cp.TopicPartition.Topic,
		"checkpointd.upstream.offset":        strconv.FormatInt(cp.UpstreamOffset, 10),
		"checkpointd.downstream.offset":      strconv.FormatInt(cp.DownstreamOffset, 10),
	})
	if !c.sent.Ref(jaegertest.ChildOf, traceID, c.decided.SpanID) {
		t.Errorf("send span is not the child of the deciding span: %v", c.sent.References)
	}
	checkSpan(t, "commit stage", c.committed, "process "+bed.CheckpointsTopic(), "consumer", map[string]string{
		"messaging.system":           "kafka",
		"messaging.destination.name": bed.CheckpointsTopic(),
		"messaging.kafka.offset":     strconv.FormatInt(cp.rec.Offset, 10),
		"checkpointd.handler":        "sync_target_offsets",
	})
	// Every instance tails the checkpoints topic for its own groups: no
	// consumer group reads it (the source's shards the work).
	if g, ok := c.committed.Tag("messaging.consumer.group.name"); ok {
		t.Errorf("commit stage: span names consumer group %q; the tail has none", g)
	}
	checkSpan(t, "target commit", c.commitCall, "commit "+group, "client", map[string]string{
		"messaging.system":              "kafka",
		"messaging.consumer.group.name": group,
	})
	checkSpan(t, "offset sync", c.resync, "process "+bed.OffsetSyncsTopic(), "consumer", map[string]string{
		"messaging.destination.name": bed.OffsetSyncsTopic(),
		"checkpointd.handler":        "index_offset_syncs",
	})
	for _, s := range []jaegertest.Span{c.consumed, c.sent, c.commitCall, c.resync} {
		if tr, err := j.Trace(t.Context(), s.TraceID); err != nil || tr.Processes[s.ProcessID].ServiceName != service {
			t.Errorf("span %q: service %q (err %v), want %q", s.OperationName, tr.Processes[s.ProcessID].ServiceName, err, service)
		}
	}
	hops := c.consumed.OperationName
	if c.decided.SpanID != c.consumed.SpanID {
		hops += " -> " + c.decided.OperationName
	}
	t.Logf("jaeger trace %s: %s -> %s -> %s; %s links to the send span; later %s re-decided %s (%s)",
		traceID, hops, c.sent.OperationName, c.committed.OperationName,
		c.commitCall.OperationName, c.resync.OperationName, group, decisionsOf(c.resync, group)[0]["checkpointd.decision"])
}

// parentOf returns the span ID of s's parent, or "".
func parentOf(s jaegertest.Span) string {
	for _, r := range s.References {
		if r.RefType == jaegertest.ChildOf {
			return r.SpanID
		}
	}
	return ""
}

// decisionsOf returns the decision events of s about group.
func decisionsOf(s jaegertest.Span, group string) []map[string]string {
	var out []map[string]string
	for _, e := range s.Events(handlers.DecisionEvent) {
		if e["checkpointd.group"] == group {
			out = append(out, e)
		}
	}
	return out
}

// checkSpan asserts the operation name, kind and tags of one span.
func checkSpan(t *testing.T, hop string, s jaegertest.Span, name, kind string, tags map[string]string) {
	t.Helper()
	if s.OperationName != name {
		t.Errorf("%s: span %q, want %q", hop, s.OperationName, name)
	}
	if got, _ := s.Tag("span.kind"); got != kind {
		t.Errorf("%s: span.kind %q, want %q", hop, got, kind)
	}
	for k, want := range tags {
		if got, ok := s.Tag(k); !ok || got != want {
			t.Errorf("%s: tag %s = %q, want %q (tags %v)", hop, k, got, want, s.TagMap())
		}
	}
}
