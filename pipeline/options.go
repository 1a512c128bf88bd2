package pipeline

import (
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/infra/metrics"
)

// Option changes how New builds a pipeline.
type Option func(*options)

type options struct {
	logger             *slog.Logger
	observer           handlers.Observer
	topicFilter        filter.Matcher
	groupFilter        filter.Matcher
	translateMW        []message.HandlerMiddleware
	commitMW           []message.HandlerMiddleware
	checkpointHandlers []namedHandler
	translateHook      func(*message.Router)
	commitHook         func(*message.Router)
	metrics            *metrics.Metrics
	tracer             trace.TracerProvider
	propagator         propagation.TextMapPropagator
}

type namedHandler struct {
	name string
	fn   message.NoPublishHandlerFunc
}

// WithLogger sets the logger; the default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithObserver receives every translation decision (metrics, audit).
func WithObserver(obs handlers.Observer) Option { return func(o *options) { o.observer = obs } }

// WithTopicFilter replaces the topics/topics.exclude filter.
func WithTopicFilter(m filter.Matcher) Option { return func(o *options) { o.topicFilter = m } }

// WithGroupFilter replaces the groups/groups.exclude filter.
func WithGroupFilter(m filter.Matcher) Option { return func(o *options) { o.groupFilter = m } }

// WithTranslateMiddleware adds middleware to every handler of the translate
// router, after the built-in ones (so it runs inside them).
func WithTranslateMiddleware(m ...message.HandlerMiddleware) Option {
	return func(o *options) { o.translateMW = append(o.translateMW, m...) }
}

// WithCommitMiddleware adds middleware to every handler of the commit router.
func WithCommitMiddleware(m ...message.HandlerMiddleware) Option {
	return func(o *options) { o.commitMW = append(o.commitMW, m...) }
}

// WithCheckpointHandler runs fn on every checkpoint record read from the
// target's checkpoints topic by the instance that holds the commit role,
// written by checkpointd or by Java MM2 alike. Control messages (see
// messages/envelope) are delivered too, so a handler can tell replay from
// live traffic. Decode records with envelope.ToRecord and
// messages.DecodeCheckpoint.
func WithCheckpointHandler(name string, fn message.NoPublishHandlerFunc) Option {
	return func(o *options) { o.checkpointHandlers = append(o.checkpointHandlers, namedHandler{name, fn}) }
}

// WithTranslateRouter calls fn with the translate router before it runs, to
// add handlers, plugins or decorators of any kind.
func WithTranslateRouter(fn func(*message.Router)) Option {
	return func(o *options) { o.translateHook = fn }
}

// WithCommitRouter calls fn with the commit router before it runs.
func WithCommitRouter(fn func(*message.Router)) Option {
	return func(o *options) { o.commitHook = fn }
}

// WithMetrics exports the pipeline's metrics through m: every decision (in
// addition to WithObserver's observer), target commit outcomes, index size,
// queue lengths and Watermill's router metrics. Serve them with
// metrics.Listen; Ready is the readiness check for its /readyz.
func WithMetrics(m *metrics.Metrics) Option { return func(o *options) { o.metrics = m } }

// WithTracing traces every record the routers process with a `process
// <topic>` span from tp (infra/telemetry), the child of the trace context in
// the record's headers; checkpoints carry it on. The commit stage's admin
// calls on the target get CLIENT spans. Without it nothing is traced.
func WithTracing(tp trace.TracerProvider) Option { return func(o *options) { o.tracer = tp } }

// WithPropagator sets how records carry their trace context, in and out:
// what the tracing setup uses (infra/telemetry/otlp's Tracing.Propagator).
// Without it, W3C Trace Context.
func WithPropagator(prop propagation.TextMapPropagator) Option {
	return func(o *options) { o.propagator = prop }
}
