// Package metrics exports checkpointd's Prometheus metrics and serves them,
// with the health endpoints, over HTTP.
//
// Metrics implements handlers.Observer (translate decisions), has hooks for
// the commit stage (TargetResult) and the readers (ReaderRecord), and adds
// Watermill's router metrics to the routers it is given. Label cardinality
// is bounded by configuration: with GroupLabels off the group label is
// always empty.
package metrics

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Namespace prefixes every checkpointd metric.
const Namespace = "checkpointd"

// Config says what the metrics describe.
type Config struct {
	// Source and Target are the cluster aliases (MM2's source and target tags).
	Source, Target string
	// GroupLabels labels metrics per consumer group
	// (checkpointd.metrics.group.labels); off, the group label is empty.
	GroupLabels bool
	// Registry to register in; nil makes a new one with the Go and process
	// collectors. Several Metrics, one per flow (Source, Target), may share
	// one registry.
	Registry *prometheus.Registry
	// LatencyBuckets are the buckets (seconds) of the latency and delay
	// histograms; nil means DefaultLatencyBuckets.
	LatencyBuckets []float64
}

// Names, without the checkpointd_ prefix, of the gauges the pipeline
// registers with GaugeFunc (it reads them from its parts).
const (
	GaugeIndexPartitions     = "index_partitions"
	GaugeIndexSyncs          = "index_syncs"
	GaugeOutboxQueued        = "outbox_queued"
	GaugeTargetGroupsPending = "target_groups_pending"
	GaugeShardsOwned         = "shards_owned"
	GaugeEventsQueued        = "events_queued"
)

// Names of the counters the pipeline registers with CounterFunc.
const (
	CounterCheckpointsPublished  = "checkpoints_published_total"
	CounterCheckpointsSuperseded = "checkpoints_superseded_total"
	CounterCheckpointBatches     = "checkpoint_batches_total"
	CounterCheckpointBatchErrors = "checkpoint_batch_failures_total"
	CounterCheckpointsDisowned   = "checkpoints_disowned_total"
	CounterEventsDropped         = "events_dropped_total"
	CounterEventsFailed          = "events_failed_total"
	// CounterOffsetSyncsTrailingBytes: offset syncs applied though they
	// carry bytes after their last field.
	CounterOffsetSyncsTrailingBytes = "offset_syncs_trailing_bytes_total"
)

// PipelineGauges lists the GaugeFunc and CounterFunc names above, for checks
// that every metric a dashboard reads exists.
var PipelineGauges = []string{GaugeIndexPartitions, GaugeIndexSyncs, GaugeOutboxQueued, GaugeTargetGroupsPending, GaugeShardsOwned,
	CounterCheckpointsPublished, CounterCheckpointsSuperseded, CounterCheckpointBatches, CounterCheckpointBatchErrors,
	CounterCheckpointsDisowned, GaugeEventsQueued, CounterEventsDropped, CounterEventsFailed}

// DefaultLatencyBuckets span a few milliseconds (event-driven checkpoints) to
// several minutes (MM2's one-minute emit interval, retries).
var DefaultLatencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Metrics holds checkpointd's collectors. Safe for concurrent use.
type Metrics struct {
	cfg  Config
	reg  *prometheus.Registry
	flow prometheus.Registerer // reg, labelling each collector with the flow

	emitted      *prometheus.CounterVec
	skipped      *prometheus.CounterVec
	malformed    *prometheus.CounterVec
	gate         prometheus.Gauge
	latency      *prometheus.HistogramVec
	targetResult *prometheus.CounterVec
	commitDelay  *prometheus.HistogramVec
	endToEnd     *prometheus.HistogramVec
	readerLag    *prometheus.GaugeVec
	readerOffset *prometheus.GaugeVec

	mu     sync.Mutex
	gauges map[string]prometheus.Collector // GaugeFunc collectors by name
	router *routerMetrics
	// freshness is shadow mode's histogram, registered on first use.
	freshness prometheus.Histogram
}

// New makes and registers the collectors.
func New(cfg Config) *Metrics {
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
		cfg.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if cfg.LatencyBuckets == nil {
		cfg.LatencyBuckets = DefaultLatencyBuckets
	}
	// Every collector of the flow carries its source and target, so that the
	// flows of one process share one registry (the Go and process collectors
	// are the registry's, once).
	flow := prometheus.WrapRegistererWith(prometheus.Labels{"source": cfg.Source, "target": cfg.Target}, cfg.Registry)
	m := &Metrics{cfg: cfg, reg: cfg.Registry, flow: flow, gauges: make(map[string]prometheus.Collector),
		router: newRouterMetrics(flow)}
	m.emitted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "checkpoints_emitted_total",
		Help: "Checkpoints decided and queued for the target's checkpoints topic.",
	}, []string{"group", "topic"})
	m.skipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "checkpoints_skipped_total",
		Help: "Evaluations of a (group, partition) that gave no checkpoint, by reason.",
	}, []string{"group", "reason"})
	m.malformed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "records_malformed_total",
		Help: "Records that could not be decoded and were passed over, by topic.",
	}, []string{"topic"})
	m.gate = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "gate_open",
		Help: "1 once the offset syncs and the checkpoints were read to their end and translation started.",
	})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "checkpoint_latency_seconds", Buckets: cfg.LatencyBuckets,
		Help: "Time from the source commit to the checkpoint being emitted, per partition (MM2's checkpoint-latency-ms).",
	}, []string{"group", "topic", "partition"})
	m.targetResult = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "target_commits_total",
		Help: "Outcomes of attempts to commit a checkpoint into a target group partition, by reason (committed or why not).",
	}, []string{"group", "reason"})
	m.commitDelay = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "target_commit_delay_seconds", Buckets: cfg.LatencyBuckets,
		Help: "Time from the checkpoint record's timestamp to its commit into the target group.",
	}, []string{"group", "topic", "partition"})
	m.endToEnd = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "end_to_end_delay_seconds", Buckets: cfg.LatencyBuckets,
		Help: "Time from the source commit to the target commit, for target commits of checkpoints emitted by this instance.",
	}, []string{"group", "topic", "partition"})
	m.readerLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "reader_lag_records",
		Help: "Records between a reader's position and the partition's high watermark, per topic and partition.",
	}, []string{"topic", "partition"})
	m.readerOffset = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "reader_offset",
		Help: "Offset of the last record a reader handled, per topic and partition.",
	}, []string{"topic", "partition"})
	m.flow.MustRegister(m.emitted, m.skipped, m.malformed, m.gate, m.latency, m.targetResult,
		m.commitDelay, m.endToEnd, m.readerLag, m.readerOffset)
	return m
}

// Registry is where the metrics are registered; collectors of other parts
// of the service may be added to it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) group(g string) string {
	if m.cfg.GroupLabels {
		return g
	}
	return ""
}

func partition(p int32) string { return strconv.Itoa(int(p)) }

// CheckpointEmitted implements handlers.Observer.
func (m *Metrics) CheckpointEmitted(_ context.Context, cp messages.Checkpoint, committedAt time.Time) {
	g := m.group(cp.Group)
	m.emitted.WithLabelValues(g, cp.TopicPartition.Topic).Inc()
	if committedAt.IsZero() {
		return
	}
	m.latency.WithLabelValues(g, cp.TopicPartition.Topic, partition(cp.TopicPartition.Partition)).
		Observe(max(time.Since(committedAt), 0).Seconds())
}

// CheckpointSkipped implements handlers.Observer.
func (m *Metrics) CheckpointSkipped(_ context.Context, group string, _ messages.TopicPartition, _ int64, reason messages.SkipReason) {
	m.skipped.WithLabelValues(m.group(group), reason.String()).Inc()
}

// SourceCommitRead implements handlers.Observer; the readers count records.
func (m *Metrics) SourceCommitRead(context.Context, messages.OffsetsRecord, time.Time) {}

// OffsetSyncApplied implements handlers.Observer; the readers count records.
func (m *Metrics) OffsetSyncApplied(context.Context, messages.OffsetSync) {}

// RecordMalformed implements handlers.Observer.
func (m *Metrics) RecordMalformed(topic string, _ int32, _ int64, _ error) {
	m.malformed.WithLabelValues(topic).Inc()
}

// GateOpened implements handlers.Observer.
func (m *Metrics) GateOpened() { m.gate.Set(1) }

// TargetResult implements handlers.Observer: the outcome of one
// attempt to commit a checkpoint (recorded at checkpointAt, for a source
// commit written at committedAt) into a target group partition. The
// end-to-end delay is measured from committedAt, which the checkpoint
// record carries in a header, so on whichever instance commits; a
// checkpoint without it (written by MM2) is not measured. Nothing is kept
// per (group, partition) here: at 100,000 pairs that cost 9 MB.
func (m *Metrics) TargetResult(_ context.Context, group string, tp messages.TopicPartition, reason targetgroup.Reason, checkpointAt, committedAt time.Time) {
	g := m.group(group)
	m.targetResult.WithLabelValues(g, string(reason)).Inc()
	if reason != targetgroup.Committed && reason != targetgroup.Rewound {
		return
	}
	now := time.Now()
	p := partition(tp.Partition)
	if !checkpointAt.IsZero() {
		m.commitDelay.WithLabelValues(g, tp.Topic, p).Observe(max(now.Sub(checkpointAt), 0).Seconds())
	}
	if !committedAt.IsZero() {
		m.endToEnd.WithLabelValues(g, tp.Topic, p).Observe(max(now.Sub(committedAt), 0).Seconds())
	}
}

// ReaderRecord is kafkalog.Hooks.OnRecord: a reader handled the record at
// offset of a partition whose high watermark was highWatermark.
func (m *Metrics) ReaderRecord(topic string, p int32, offset, highWatermark int64) {
	ps := partition(p)
	m.readerOffset.WithLabelValues(topic, ps).Set(float64(offset))
	m.readerLag.WithLabelValues(topic, ps).Set(float64(max(highWatermark-offset-1, 0)))
}

// GaugeFunc registers a gauge read when scraped, such as a size or a queue
// length; name gets the checkpointd_ prefix. Registering a name again
// replaces the function (a pipeline built anew with the same Metrics).
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.registerFunc(name, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: name, Help: help,
	}, f))
}

// CounterFunc registers a counter read when scraped from a part that counts
// for itself (name gets the checkpointd_ prefix and should end in _total).
func (m *Metrics) CounterFunc(name, help string, f func() float64) {
	m.registerFunc(name, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: Namespace, Name: name, Help: help,
	}, f))
}

func (m *Metrics) registerFunc(name string, c prometheus.Collector) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.gauges[name]; ok {
		m.flow.Unregister(old)
	}
	m.flow.MustRegister(c)
	m.gauges[name] = c
}
