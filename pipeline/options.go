package pipeline

import (
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/handlers/policy"
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
	translateHooks     []func(*message.Router)
	commitHooks        []func(*message.Router)
	eventHandlers      []*events.Handler
	policies           []policy.Policy
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
// router, after the built-in ones (so it runs inside them). Middleware sees
// one message per batch of records, and control messages.
func WithTranslateMiddleware(m ...message.HandlerMiddleware) Option {
	return func(o *options) { o.translateMW = append(o.translateMW, m...) }
}

// WithCommitMiddleware adds middleware to every handler of the commit
// router; sync_target_offsets gets batches of records per message, checkpoint
// handlers single records.
func WithCommitMiddleware(m ...message.HandlerMiddleware) Option {
	return func(o *options) { o.commitMW = append(o.commitMW, m...) }
}

// WithCheckpointHandler runs fn on every checkpoint record read from the
// target's checkpoints topic, written by checkpointd or by Java MM2 alike,
// one record per message, on one instance at a time: the handler reads
// through a consumer group of its own, named
// <checkpointd.group.id>-handler-<name> (ConsumerGroups lists it). Control
// messages (see messages/envelope) are delivered too, so a handler can tell
// replay from live traffic. Decode records with envelope.ToRecord and
// messages.DecodeCheckpoint. For checkpointd's own decisions, without
// decoding, prefer WithEventHandler. The name must not be a built-in
// handler's (BuiltinHandlers) nor another handler's: New fails if it is.
func WithCheckpointHandler(name string, fn message.NoPublishHandlerFunc) Option {
	return func(o *options) { o.checkpointHandlers = append(o.checkpointHandlers, namedHandler{name, fn}) }
}

// WithTranslateRouter calls fn with the translate router once its
// handlers are added, before it runs, to add handlers, plugins or
// decorators of any kind. Each call adds a hook; they run in order. The
// built-in readers hand the router batches of up to 500 records per
// message (messages/envelope) and control messages, not single records:
// for typed, per-decision events use WithEventHandler. A handler name that
// is taken makes New fail (Watermill would panic).
func WithTranslateRouter(fn func(*message.Router)) Option {
	return func(o *options) { o.translateHooks = append(o.translateHooks, fn) }
}

// WithCommitRouter calls fn with the commit router before it runs; each
// call adds a hook. The commit router exists only when
// sync.group.offsets.enabled=true or a WithCheckpointHandler is set: New
// fails otherwise, saying so, rather than never calling fn.
func WithCommitRouter(fn func(*message.Router)) Option {
	return func(o *options) { o.commitHooks = append(o.commitHooks, fn) }
}

// WithEventHandler registers typed event handlers (events.AddNoPublisherHandler,
// events.AddHandler, events.Forward): they get the pipeline's events for
// the groups this instance owns, live, each on its own bounded queue, so a
// slow handler never holds the pipeline up (docs/extending.md). Names are
// checked like WithCheckpointHandler's. Each call appends.
func WithEventHandler(h ...*events.Handler) Option {
	return func(o *options) { o.eventHandlers = append(o.eventHandlers, h...) }
}

// WithCheckpointPolicy adds a policy that can veto checkpoints before they
// are written or commit a group's offsets into a target group of another
// name (see handlers/policy). Policies apply in the order given; the core's
// rules hold whatever they decide. Each call appends.
func WithCheckpointPolicy(p policy.Policy) Option {
	return func(o *options) { o.policies = append(o.policies, p) }
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
