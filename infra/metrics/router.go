package metrics

import (
	"sync"
	"time"

	wmetrics "github.com/ThreeDotsLabs/watermill/components/metrics"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"
)

// routerMetrics are the router metrics Watermill's PrometheusMetricsBuilder
// exports, under the same names and labels, counted by one handler
// middleware. Watermill's subscriber decorator costs a goroutine, a label
// map and an extra channel hop per message, and its handler middleware a
// label map and a vector lookup; at thousands of commits a second that was
// a tenth of checkpointd's CPU. Here a message costs two pre-resolved
// collectors.
type routerMetrics struct {
	execTime *prometheus.HistogramVec
	received *prometheus.CounterVec

	mu       sync.Mutex
	handlers map[handlerKey]*handlerCollectors
}

type handlerKey struct{ handler, subscriber string }

// handlerCollectors are one handler's collectors, resolved once.
type handlerCollectors struct {
	ok, failed    prometheus.Observer
	acked, nacked prometheus.Counter
}

// handlerExecutionBuckets are Watermill's defaults for this histogram:
// handlers run in microseconds to milliseconds.
var handlerExecutionBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

func newRouterMetrics(reg prometheus.Registerer) *routerMetrics {
	rm := &routerMetrics{
		execTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "router", Name: "handler_execution_time_seconds",
			Help:    "The total time elapsed while executing the handler function in seconds",
			Buckets: handlerExecutionBuckets,
		}, []string{"handler_name", "success"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "router", Name: "subscriber_messages_received_total",
			Help: "The total number of messages received by the subscriber",
		}, []string{"handler_name", "subscriber_name", "acked"}),
		handlers: make(map[handlerKey]*handlerCollectors),
	}
	reg.MustRegister(rm.execTime, rm.received)
	return rm
}

// middleware times each handler call and counts the message as acked when
// the handler succeeded (the router then acks it) and nacked when it failed.
func (rm *routerMetrics) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		start := time.Now()
		c := rm.collectors(msg)
		out, err := h(msg)
		if err != nil {
			c.failed.Observe(time.Since(start).Seconds())
			c.nacked.Inc()
			return out, err
		}
		c.ok.Observe(time.Since(start).Seconds())
		c.acked.Inc()
		return out, nil
	}
}

func (rm *routerMetrics) collectors(msg *message.Message) *handlerCollectors {
	ctx := msg.Context()
	key := handlerKey{message.HandlerNameFromCtx(ctx), message.SubscriberNameFromCtx(ctx)}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if c, ok := rm.handlers[key]; ok {
		return c
	}
	c := &handlerCollectors{
		ok:     rm.execTime.WithLabelValues(key.handler, "true"),
		failed: rm.execTime.WithLabelValues(key.handler, "false"),
		acked:  rm.received.WithLabelValues(key.handler, key.subscriber, "acked"),
		nacked: rm.received.WithLabelValues(key.handler, key.subscriber, "nacked"),
	}
	rm.handlers[key] = c
	return c
}

// AddRouter adds the router metrics to r: handler execution time and
// messages received per handler, and Watermill's publish time for the
// router's own publishers (checkpointd publishes through its outbox, so
// that one is usually empty). Handler names are unique over both routers.
// Call it before the router runs.
func (m *Metrics) AddRouter(r *message.Router) {
	r.AddMiddleware(m.router.middleware)
	r.AddPublisherDecorators(wmetrics.NewPrometheusMetricsBuilder(m.flow, Namespace, "router").DecoratePublisher)
}
