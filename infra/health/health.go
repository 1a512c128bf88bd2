// Package health keeps what /readyz reports about the pipeline's stages.
//
// Each stage (a reader, the checkpoint publisher, the commit stage) reports
// into a Stage: Failure when an attempt against its cluster failed, Success
// when one went through. A stage that has been failing without a success for
// longer than the failure timeout makes the instance not ready, with the
// stage, its cluster and the last error as the reason. Reading the state never
// waits on the stages: it takes one short lock per stage.
//
// Readiness follows the clusters, not the traffic: a stage that is idle has
// nothing to succeed at once its cluster is back. So a failure that only says
// the cluster could not be reached (Registry's unreachable classifier) is
// over once that cluster has answered since — its probe answered
// (ClusterAnswered) or another stage on it recovered — and the stage has not
// failed again for a few seconds (settle: a stage still cut off, say from a
// broker that is down while the others answer, fails again within its retry
// gap and stays failing). Failures of any other kind (a denied ACL, a missing
// topic) end only with the stage's own success or by going stale.
package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// settle is how long a stage whose failures only said its cluster could not
// be reached must stay quiet, after the cluster answered again, before those
// failures are over: longer than the pause of sarama's retries (2 s).
const settle = 3 * time.Second

// DefaultFailureTimeout is how long a stage may fail before the instance is
// not ready (checkpointd.health.stage.failure.timeout.ms).
const DefaultFailureTimeout = 30 * time.Second

// Registry holds the stages of one pipeline.
type Registry struct {
	timeout     time.Duration
	logger      *slog.Logger
	now         func() time.Time
	unreachable func(error) bool

	mu       sync.Mutex
	stages   []*Stage
	clusters map[string]*clusterSeen
}

// clusterSeen is when a cluster last answered anyone.
type clusterSeen struct {
	at atomic.Int64 // Unix nanoseconds; 0: never
}

func (c *clusterSeen) saw(t time.Time) {
	n := t.UnixNano()
	for {
		old := c.at.Load()
		if old >= n || c.at.CompareAndSwap(old, n) {
			return
		}
	}
}

// since reports whether the cluster answered after t.
func (c *clusterSeen) since(t time.Time) bool { return c.at.Load() > t.UnixNano() }

// Option configures a Registry.
type Option func(*Registry)

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(r *Registry) { r.now = now } }

// WithUnreachable sets how to tell a failure that only says the cluster
// could not be reached (a refused connection, a timeout, no broker left):
// such a failure is over once the cluster answers again. Without it every
// failure waits for the stage's own success or for going stale.
func WithUnreachable(unreachable func(error) bool) Option {
	return func(r *Registry) { r.unreachable = unreachable }
}

// New makes a registry whose stages turn the instance not ready after
// failing for timeout (DefaultFailureTimeout when timeout ≤ 0).
func New(timeout time.Duration, logger *slog.Logger, opt ...Option) *Registry {
	if timeout <= 0 {
		timeout = DefaultFailureTimeout
	}
	if logger == nil {
		logger = slog.Default()
	}
	r := &Registry{timeout: timeout, logger: logger, now: time.Now, clusters: make(map[string]*clusterSeen)}
	for _, o := range opt {
		o(r)
	}
	return r
}

// Timeout is the failure timeout.
func (r *Registry) Timeout() time.Duration { return r.timeout }

// Stage adds a stage that talks to cluster. retryGap is the longest pause
// its retries take while it keeps failing (its retry backoff, or the retry
// interval of the commit stage): a stage that reported no failure for
// longer than the timeout plus twice that gap has stopped failing, even
// without a success to say so (an idle stage has nothing to succeed at).
func (r *Registry) Stage(name, cluster string, retryGap time.Duration) *Stage {
	s := &Stage{
		name: name, cluster: cluster, now: r.now, timeout: r.timeout,
		quiet:       r.timeout + 2*max(retryGap, 0),
		gap:         max(retryGap, settle),
		logger:      r.logger.With("stage", name, "cluster", cluster),
		unreachable: r.unreachable,
	}
	r.mu.Lock()
	s.seen = r.clusterLocked(cluster)
	r.stages = append(r.stages, s)
	r.mu.Unlock()
	return s
}

func (r *Registry) clusterLocked(cluster string) *clusterSeen {
	c, ok := r.clusters[cluster]
	if !ok {
		c = new(clusterSeen)
		r.clusters[cluster] = c
	}
	return c
}

// ClusterAnswered reports that cluster (named as its stages name it)
// answered a request sent at `at`, e.g. the readiness probe's: the failures
// of its stages that only said it could not be reached, all reported before
// that, are over.
func (r *Registry) ClusterAnswered(cluster string, at time.Time) {
	r.mu.Lock()
	c := r.clusterLocked(cluster)
	r.mu.Unlock()
	c.saw(at)
}

// Stages names every stage and its cluster, in the order they were added:
// what /readyz says a pipeline is made of.
func (r *Registry) Stages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.stages))
	for i, s := range r.stages {
		out[i] = s.name + " on " + s.cluster
	}
	return out
}

// Check returns nil when no stage has been failing for longer than the
// timeout, else an error naming each failing stage, its cluster, for how
// long and the last error, on one line.
func (r *Registry) Check() error {
	r.mu.Lock()
	stages := append([]*Stage(nil), r.stages...)
	r.mu.Unlock()
	var reasons []string
	for _, s := range stages {
		if err := s.Check(); err != nil {
			reasons = append(reasons, err.Error())
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "; "))
}

// Stage is the health of one stage. Its methods are safe for concurrent use;
// Success costs one atomic load while the stage is healthy, so it can be
// called per record.
type Stage struct {
	name, cluster  string
	timeout, quiet time.Duration
	gap            time.Duration // the longest pause between the retries of a stage still failing
	now            func() time.Time
	logger         *slog.Logger
	unreachable    func(error) bool // nil: no failure is cleared by the cluster answering
	seen           *clusterSeen     // when the stage's cluster last answered anyone

	failing atomic.Bool // mirrors since != zero, for Success's fast path

	mu       sync.Mutex
	since    time.Time // first failure after the last success; zero when healthy
	last     time.Time // latest failure
	lastErr  error
	lastOut  bool // lastErr only says the cluster could not be reached
	failures int  // since `since`
	reported bool // the failure made Check fail and was logged
}

// Name is the stage's name.
func (s *Stage) Name() string { return s.name }

// Success reports an attempt that went through: the stage is healthy again.
func (s *Stage) Success() {
	if s == nil || !s.failing.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since.IsZero() {
		return
	}
	level := slog.LevelDebug // a failure that never made the instance not ready is no state change
	if s.reported {
		level = slog.LevelInfo
	}
	now := s.now()
	s.logger.Log(context.Background(), level, "stage recovered",
		"failed_for", now.Sub(s.since).Round(time.Millisecond), "failures", s.failures)
	s.reset()
	s.seen.saw(now) // the cluster answered: news for its idle stages
}

// Failure reports an attempt that failed with err.
func (s *Stage) Failure(err error) {
	if s == nil {
		return
	}
	if err == nil {
		err = errors.New("unknown error")
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.since.IsZero() && (now.Sub(s.last) > s.quiet || s.clusterBack(now) && now.Sub(s.last) > s.gap) {
		s.reset() // the earlier failures ended long ago, or with an outage since over
	}
	if s.since.IsZero() {
		s.since = now
		s.failing.Store(true)
	}
	s.last, s.lastErr = now, err
	s.lastOut = s.unreachable != nil && s.unreachable(err)
	s.failures++
}

// clusterBack reports whether the last failure only said the cluster could
// not be reached, the cluster has answered since, and the stage has been
// quiet for settle. The caller holds s.mu.
func (s *Stage) clusterBack(now time.Time) bool {
	return s.lastOut && s.seen.since(s.last) && now.Sub(s.last) >= settle
}

func (s *Stage) reset() {
	s.since, s.last, s.lastErr, s.lastOut, s.failures, s.reported = time.Time{}, time.Time{}, nil, false, 0, false
	s.failing.Store(false)
}

// Check returns nil unless the stage has been failing for longer than the
// timeout, else why, naming the stage and its cluster.
func (s *Stage) Check() error {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since.IsZero() || now.Sub(s.last) > s.quiet {
		return nil
	}
	if s.clusterBack(now) {
		// The outage is over, even if this stage has had nothing to do
		// since to prove it. The streak is kept (not reset) so that a stage
		// failing on, within its retry gap, is still failing since `since`.
		if s.reported {
			s.reported = false
			s.logger.Info("stage recovered: its cluster answers again",
				"failed_for", s.last.Sub(s.since).Round(time.Millisecond), "failures", s.failures)
		}
		return nil
	}
	if now.Sub(s.since) < s.timeout {
		return nil
	}
	if !s.reported {
		s.reported = true
		s.logger.Warn("stage failing longer than the timeout: instance not ready",
			"failing_for", now.Sub(s.since).Round(time.Second), "timeout", s.timeout, "failures", s.failures,
			"error", OneLine(s.lastErr.Error()))
	}
	return fmt.Errorf("stage %s on cluster %s failing for %s (%d failures, last %s ago): %s",
		s.name, s.cluster, now.Sub(s.since).Round(time.Second), s.failures,
		now.Sub(s.last).Round(100*time.Millisecond), OneLine(s.lastErr.Error()))
}

// OneLine puts a message on one line: line breaks and the indentation after
// them become " | ".
func OneLine(msg string) string {
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	lines := strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' })
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, " | ")
}
