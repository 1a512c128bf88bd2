// Package otlp sets up OpenTelemetry tracing from the standard OTEL_*
// environment variables, exporting over OTLP (HTTP or gRPC). It is apart from
// package telemetry so that what only traces (the pipeline, the demo) does not
// build the exporters and gRPC.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Options of Setup.
type Options struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES set it. Default "checkpointd".
	ServiceName    string
	ServiceVersion string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	Logger *slog.Logger
}

// Tracing is the configured tracing: a tracer provider that exports, or
// none when tracing is off.
type Tracing struct {
	tp   *sdktrace.TracerProvider // nil when off
	prop propagation.TextMapPropagator
}

// Propagator is how records carry trace context: W3C Trace Context and
// Baggage, whether tracing is on or off.
func (t *Tracing) Propagator() propagation.TextMapPropagator { return t.prop }

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.tp != nil }

// TracerProvider is the provider to trace with; nil when tracing is off.
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.Enabled() {
		return nil
	}
	return t.tp
}

// Shutdown flushes the spans still buffered and stops exporting.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Setup configures tracing from the environment:
//
//   - The W3C trace-context and baggage propagators are always installed
//     globally: trace context in Kafka headers is what links the hops.
//   - Tracing is off (no exporter, no middleware: no cost) when
//     OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, and also when
//     OTEL_TRACES_EXPORTER is unset and no OTLP endpoint
//     (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
//     given.
//   - OTEL_TRACES_EXPORTER=otlp (or an endpoint) exports over OTLP:
//     OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL
//     chooses grpc or http/protobuf (the default). The exporters read the
//     other OTEL_EXPORTER_OTLP_* variables (endpoint, headers, TLS, timeout)
//     themselves; the SDK reads OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*.
//   - The resource takes OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// When tracing is on, the provider is also installed globally.
func Setup(ctx context.Context, o Options) (*Tracing, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.ServiceName == "" {
		o.ServiceName = "checkpointd"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	// Installed globally too, for the handlers users plug into the router;
	// checkpointd's own code is handed it (Tracing.Propagator).
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	otel.SetTextMapPropagator(prop)

	on, err := enabled(getenv)
	if err != nil {
		return nil, err
	}
	if !on {
		o.Logger.Debug("tracing off: no OTEL_TRACES_EXPORTER and no OTLP endpoint set")
		return &Tracing{prop: prop}, nil
	}
	protocol := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		protocol = "http/protobuf"
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (%s): %w", protocol, err)
	}
	attrs := []resource.Option{
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(o.ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // after the defaults: the environment wins
	}
	if o.ServiceVersion != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(o.ServiceVersion)))
	}
	res, err := resource.New(ctx, attrs...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	// The SDK reports failed exports to otel's error handler, which by default
	// writes to the standard logger: send them through ours, in its format.
	log := o.Logger
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: exporting spans failed", "error", err)
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	o.Logger.Info("tracing on", "exporter", "otlp", "protocol", protocol)
	return &Tracing{tp: tp, prop: prop}, nil
}

func enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp or none", exp)
	}
}
