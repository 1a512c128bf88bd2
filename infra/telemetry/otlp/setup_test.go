package otlp

import (
	"context"
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
