package jaegertest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/internal/testbed/jaegertest"
)

// TestRoundTrip exports a parent, a child with an event and a span linking
// to the parent over OTLP/HTTP, and reads them back from the query API with
// their kinds, tags, event, CHILD_OF and FOLLOWS_FROM references. It also
// checks that Jaeger listens on loopback only. The first run builds Jaeger
// (minutes cold; `make test` builds it ahead with `make jaeger`).
func TestRoundTrip(t *testing.T) {
	j := jaegertest.Start(t)
	checkLoopbackOnly(t, j)

	ctx := t.Context()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(j.OTLPHTTP), otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	service := fmt.Sprintf("jaegertest-%d", time.Now().UnixNano())
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service))))
	tr := tp.Tracer("jaegertest")
	pctx, parent := tr.Start(ctx, "parent", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.Int64("offset", 42), attribute.String("topic", "t")))
	_, child := tr.Start(pctx, "child")
	child.AddEvent("decided", trace.WithAttributes(attribute.String("reason", "emitted")))
	child.End()
	parent.End()
	_, linked := tr.Start(ctx, "linked", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: parent.SpanContext()}))
	linked.End()
	if err := tp.Shutdown(ctx); err != nil { // flushes
		t.Fatalf("flush spans to jaeger: %v", err)
	}

	ptrace, pid := parent.SpanContext().TraceID().String(), parent.SpanContext().SpanID().String()
	spans := map[string]jaegertest.Span{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		traces, err := j.Traces(ctx, service)
		if err != nil {
			t.Fatal(err)
		}
		clear(spans)
		for _, tr := range traces {
			for _, s := range tr.Spans {
				spans[s.OperationName] = s
			}
		}
		if len(spans) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger holds %d of 3 spans of %s after 30s", len(spans), service)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p, c, l := spans["parent"], spans["child"], spans["linked"]
	if p.TraceID != ptrace || p.SpanID != pid {
		t.Errorf("parent is %s/%s, want %s/%s", p.TraceID, p.SpanID, ptrace, pid)
	}
	if tags := p.TagMap(); tags["span.kind"] != "consumer" || tags["offset"] != "42" || tags["topic"] != "t" {
		t.Errorf("parent tags %v", tags)
	}
	if !c.Ref(jaegertest.ChildOf, ptrace, pid) {
		t.Errorf("child references %v, want CHILD_OF the parent", c.References)
	}
	if evs := c.Events("decided"); len(evs) != 1 || evs[0]["reason"] != "emitted" {
		t.Errorf("child events %v (logs %v)", evs, c.Logs)
	}
	if kind, _ := l.Tag("span.kind"); kind != "client" || !l.Ref(jaegertest.FollowsFrom, ptrace, pid) {
		t.Errorf("linked span kind %q, references %v, want client FOLLOWS_FROM the parent", kind, l.References)
	}
}

// checkLoopbackOnly reads the process's listening TCP and its UDP sockets
// (Linux only) and fails if one is bound to anything but 127.0.0.1.
func checkLoopbackOnly(t *testing.T, j *jaegertest.Jaeger) {
	t.Helper()
	pid := j.Pid()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Logf("cannot list the listeners (%v); loopback binding not checked", err)
		return
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var listening []string
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] || (strings.HasPrefix(table, "tcp") && f[3] != "0A") { // 0A: LISTEN
				continue
			}
			listening = append(listening, table+" "+f[1])
			if !strings.HasPrefix(f[1], "0100007F:") { // 127.0.0.1, little-endian hex
				t.Errorf("jaeger listens on %s %s, want 127.0.0.1 only", table, f[1])
			}
		}
	}
	if len(listening) < 7 {
		t.Errorf("found %d listeners of jaeger (%v), want its 7", len(listening), listening)
	}
}
