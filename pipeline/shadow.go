package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/shadow"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/metrics"
	"github.com/checkpointd/checkpointd/infra/targetgroups"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// shadowMode is what checkpointd.shadow.enabled adds to a pipeline: the
// write side that keeps everything from the target (shadowWrites), the
// comparison of its decisions with MM2's checkpoints, and a read-only
// poll of the target groups' offsets.
type shadowMode struct {
	flow    string
	cmp     *shadow.Comparator
	writes  *shadowWrites
	logger  *slog.Logger
	every   time.Duration
	started time.Time

	// live: the checkpoints topic was read to the end it had at start;
	// records after that are MM2's new checkpoints.
	live atomic.Bool
	// Set by build.
	groups  func(group string) bool
	owns    func(group string) bool
	offsets func(ctx context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error)
}

func newShadowMode(cfg *config.Config, logger *slog.Logger) *shadowMode {
	s := &shadowMode{flow: cfg.String(), logger: logger, every: cfg.SyncGroupOffsetsInterval, started: time.Now()}
	s.cmp = shadow.New(shadow.Config{
		Rename: func(topic string) string {
			return messages.DownstreamTopic(cfg.Policy, cfg.SourceAlias, cfg.TargetAlias, topic)
		},
		Groups: func(g string) bool { return s.groups == nil || s.groups(g) },
	})
	s.writes = &shadowWrites{logger: logger, decided: func(cp messages.Checkpoint) { s.cmp.Decided(cp, time.Now()) }}
	logger.Info("shadow mode: reading and deciding as in production, writing nothing to the target")
	return s
}

// tap reads the checkpoints topic for the comparison. Until the topic was
// read to its start-up end, records go to the Checkpointer too: they are
// where checkpointd would start from if it took over now. After that they
// are MM2's new checkpoints, which would not exist were checkpointd
// writing: the Checkpointer goes on from its own decisions, as it would.
func (s *shadowMode) tap(next func(*message.Message) error) func(*message.Message) error {
	return func(msg *message.Message) error {
		if ctl, _, _, ok := envelope.ControlOf(msg); ok {
			err := next(msg)
			if ctl == envelope.CaughtUp {
				s.live.Store(true)
			}
			return err
		}
		live := s.live.Load()
		if recs, err := envelope.Records(msg); err == nil {
			for _, rec := range recs {
				if rec.Tombstone() {
					continue
				}
				cp, err := messages.DecodeCheckpoint(rec.Key, rec.Value)
				if err != nil {
					continue // the Checkpointer reports it (before the gate)
				}
				if live {
					s.cmp.MM2(cp, rec.Timestamp)
				} else {
					s.cmp.Restored(cp, rec.Timestamp)
				}
			}
		}
		if live {
			return nil
		}
		return next(msg)
	}
}

// build finishes a shadow pipeline in place of the commit stage: the
// target groups are read, never committed into.
func (s *shadowMode) build(p *Pipeline, targetClient sarama.Client) error {
	tg, err := targetgroups.New(targetClient, p.logger)
	if err != nil {
		return fmt.Errorf("target groups: %w", err)
	}
	p.closers = append(p.closers, tg.Close)
	s.offsets = tg.Offsets
	s.groups = p.groupFilter.Match
	shards := p.shards
	s.owns = func(g string) bool { _, _, ok := shards.Owner(g); return ok }
	if n := len(p.opts.checkpointHandlers); n > 0 {
		p.logger.Warn("shadow mode: checkpoint handlers do not run (the checkpoints topic holds MM2's checkpoints)", "handlers", n)
	}
	if p.cfg.SyncGroupOffsets {
		p.logger.Info("shadow mode: target groups are read and compared, not committed into",
			"interval", p.cfg.SyncGroupOffsetsInterval)
	}
	return nil
}

// run reads the owned groups' offsets on the target every
// sync.group.offsets.interval.seconds until ctx ends.
func (s *shadowMode) run(ctx context.Context) error {
	t := time.NewTicker(max(s.every, 100*time.Millisecond))
	defer t.Stop()
	var warned time.Time // a failure is logged at most once a minute
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		groups := slices.DeleteFunc(s.cmp.Groups(), func(g string) bool { return !s.owns(g) })
		if len(groups) == 0 {
			continue
		}
		offsets, failed := s.offsets(ctx, groups)
		for g, offs := range offsets {
			s.cmp.Target(g, offs)
		}
		if g, err := firstFailure(failed); err != nil && time.Since(warned) >= time.Minute {
			warned = time.Now()
			s.logger.Warn("shadow mode: could not read target group offsets", "groups", len(failed), "group", g, "error", err)
		}
	}
}

// firstFailure picks one failed group to log, the same one each time.
func firstFailure(failed map[string]error) (string, error) {
	if len(failed) == 0 {
		return "", nil
	}
	g := slices.Min(slices.Collect(maps.Keys(failed)))
	return g, failed[g]
}

// ShadowReport is what a shadow pipeline serves at /shadow.
type ShadowReport struct {
	Flow string `json:"flow"`
	// Since is when the pipeline started: freshness and agreement are
	// measured from then.
	Since  time.Time     `json:"since"`
	Counts shadow.Counts `json:"counts"`
	// Withheld counts what shadow mode kept from the target, by kind:
	// checkpoint and commit_log records, target_commit calls, topics not
	// created. Every one would have been a write.
	Withheld map[string]int64 `json:"withheld"`
	Rows     []shadow.Row     `json:"rows"`
}

// ShadowReport compares this instance's groups; ok is false unless the
// pipeline runs in shadow mode.
func (p *Pipeline) ShadowReport() (ShadowReport, bool) {
	if p.shadow == nil {
		return ShadowReport{}, false
	}
	return p.shadow.report(), true
}

func (s *shadowMode) report() ShadowReport {
	keep := s.owns
	if keep == nil {
		keep = func(string) bool { return false }
	}
	rows := s.cmp.Report(keep)
	return ShadowReport{Flow: s.flow, Since: s.started, Counts: shadow.Count(rows), Withheld: s.writes.withheld(), Rows: rows}
}

// instrument registers the shadow metrics: pairs by status, the pairs lower
// than MM2 with no rule to say why, the writes withheld, and (through the
// observer) the freshness gained.
func (s *shadowMode) instrument(m *metrics.Metrics) {
	s.cmp.SetObserver(m)
	m.LabeledGaugeFunc(metrics.GaugeShadowPairs, "Shadow mode: (group, partition) pairs by how checkpointd's checkpoint compares with MM2's.", "status",
		func() map[string]float64 {
			c := s.report().Counts
			out := make(map[string]float64, len(c.ByStatus))
			for st, n := range c.ByStatus {
				out[string(st)] = float64(n)
			}
			return out
		})
	m.GaugeFunc(metrics.GaugeShadowUnexplained, "Shadow mode: pairs where checkpointd would be lower than MM2 (or write nothing) with no rule that says why.",
		func() float64 { return float64(s.report().Counts.Unexplained) })
	m.LabeledCounterFunc(metrics.CounterShadowWithheld, "Shadow mode: writes kept from the target, by kind (checkpoint, commit_log, target_commit, topic).", "kind",
		func() map[string]float64 {
			out := make(map[string]float64)
			for k, v := range s.writes.withheld() {
				out[k] = float64(v)
			}
			return out
		})
}

// shadowObserver feeds the Checkpointer's skips to the comparison.
type shadowObserver struct {
	handlers.NopObserver
	cmp *shadow.Comparator
}

func (o shadowObserver) CheckpointSkipped(_ context.Context, group string, tp messages.TopicPartition, upstream int64, reason messages.SkipReason) {
	o.cmp.Skipped(group, tp, upstream, reason)
}
