package otlp

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
)

// TestSetupOff checks tracing stays off unless an exporter is asked for.
func TestSetupOff(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
		{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
	} {
		tr, err := Setup(context.Background(), Options{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatalf("%v: %v", env, err)
		}
		if tr.Enabled() || tr.TracerProvider() != nil {
			t.Errorf("%v: tracing on, want off", env)
		}
		if tr.Propagator() == nil {
			t.Errorf("%v: no propagator with tracing off", env)
		}
	}
	if _, err := Setup(context.Background(), Options{Getenv: func(k string) string {
		return map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}[k]
	}}); err == nil {
		t.Error("OTEL_TRACES_EXPORTER=zipkin accepted")
	}
}

// TestSetupOn builds an OTLP/HTTP exporter from the environment (nothing is
// sent: no span is recorded) and shuts it down.
func TestSetupOn(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SERVICE_NAME": "cpd-test"}
	prev := otel.GetTracerProvider()
	defer otel.SetTracerProvider(prev)
	tr, err := Setup(context.Background(), Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() {
		t.Fatal("tracing off with an OTLP endpoint set")
	}
	// Checkpoint records carry W3C context through the handed-in propagator.
	if fields := tr.Propagator().Fields(); !slices.Contains(fields, "traceparent") || !slices.Contains(fields, "baggage") {
		t.Errorf("propagator fields %v, want traceparent and baggage", fields)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestExportFailuresAreLogged: when the collector is unreachable, the
// exporter's error reaches the service's logger (not the standard logger).
func TestExportFailuresAreLogged(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // nothing listens
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	prevTP, prevEH := otel.GetTracerProvider(), otel.GetErrorHandler()
	defer otel.SetTracerProvider(prevTP)
	defer otel.SetErrorHandler(prevEH)
	var logs lockedBuffer
	tr, err := Setup(context.Background(), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = tr.Shutdown(ctx) // fails too: the last export has nowhere to go
	}()
	_, span := tr.TracerProvider().Tracer("test").Start(context.Background(), "op")
	span.End()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "exporting spans failed") {
		if time.Now().After(deadline) {
			t.Fatalf("no export failure logged in 10 s; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("export failure not a warning:\n%s", logs.String())
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
