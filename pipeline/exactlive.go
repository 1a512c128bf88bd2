package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/exact"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/recordfetch"
	"github.com/checkpointd/checkpointd/messages"
)

// exactLive looks, for groups whose commit has stayed put for
// checkpointd.exact.idle.ms, for the exact translation in the records and
// emits it as an ordinary checkpoint when it is ahead of MM2's: a planned
// failover (stop the consumers, wait, start them on the target) then
// replays nothing. Active groups keep the event-driven path untouched.
type exactLive struct {
	cpr    *handlers.Checkpointer
	cfg    *config.Config
	idle   time.Duration
	logger *slog.Logger
	count  func(outcome string) // nil without metrics

	source, target *recordfetch.Reader
	closers        []func()

	// tried holds the outcome for commits searched already, so a commit is
	// searched once unless its outcome may change (not replicated yet, a
	// failed read).
	tried map[liveKey]exact.Reason
}

type liveKey struct {
	group  string
	tp     messages.TopicPartition
	offset int64
}

// runExactLive runs the idle-group exact translation until ctx ends. A
// cluster it cannot reach is tried again next round: this is a refinement,
// and never stops the pipeline.
func (p *Pipeline) runExactLive(ctx context.Context) error {
	l := &exactLive{cpr: p.checkpointer, cfg: p.cfg, idle: p.cfg.ExactIdle, logger: p.logger, count: p.exactOutcome, tried: map[liveKey]exact.Reason{}}
	defer l.close()
	every := min(max(l.idle/2, time.Second), 10*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			l.round(ctx)
		}
	}
}

func (l *exactLive) close() {
	for _, c := range l.closers {
		c()
	}
}

// connect opens the readers once.
func (l *exactLive) connect() error {
	if l.source != nil && l.target != nil {
		return nil
	}
	src, closeSrc, err := recordReader(l.cfg, l.cfg.Source, config.SourceConsumer, l.cfg.SourceAlias)
	if err != nil {
		return err
	}
	tgt, closeTgt, err := recordReader(l.cfg, l.cfg.Target, config.TargetConsumer, l.cfg.TargetAlias)
	if err != nil {
		closeSrc()
		return err
	}
	l.source, l.target = src, tgt
	l.closers = append(l.closers, closeSrc, closeTgt)
	return nil
}

// retried reports whether a search that ended with r is worth another
// round for the same commit.
func retried(r exact.Reason) bool {
	return r == exact.ReasonNotReplicatedYet || r == exact.ReasonFetchFailed
}

// round searches the idle commits not settled yet and emits what is exact
// and ahead of the last checkpoint.
func (l *exactLive) round(ctx context.Context) {
	idle := l.cpr.IdleCommits(time.Now().Add(-l.idle))
	seen := make(map[liveKey]bool, len(idle))
	var todo []handlers.IdleCommit
	for _, ic := range idle {
		k := liveKey{ic.Group, ic.Upstream, ic.Offset}
		seen[k] = true
		if r, ok := l.tried[k]; !ok || retried(r) {
			todo = append(todo, ic)
		}
	}
	for k := range l.tried {
		if !seen[k] {
			delete(l.tried, k) // the commit moved on, or the group left
		}
	}
	if len(todo) == 0 {
		return
	}
	if err := l.connect(); err != nil {
		l.logger.Warn("exact translation of idle groups: cannot connect; trying again next round", "error", err)
		return
	}
	// A search per round, so end offsets are read afresh.
	s := &exactSearch{ix: l.cpr.Index(), source: l.source, target: l.target, budget: l.cfg.ExactFetchMaxBytes}
	var mu sync.Mutex
	counts := map[exact.Reason]int{}
	emitted := 0
	var bytes int64
	sem := make(chan struct{}, exactSearches)
	var wg sync.WaitGroup
	for _, ic := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, n := s.locate(ctx, ic.Upstream, ic.Target, ic.Offset)
			emit := res.Exact() && res.Downstream > ic.Checkpointed && l.cpr.EmitExact(ctx, ic.Group, ic.Upstream, ic.Offset, res.Downstream)
			l.logger.Debug("exact translation of an idle group", "group", ic.Group, "topic", ic.Upstream.Topic,
				"partition", ic.Upstream.Partition, "committed", ic.Offset, "outcome", res.Reason.String(),
				"downstream", res.Downstream, "emitted", emit, "detail", res.Detail)
			mu.Lock()
			defer mu.Unlock()
			l.tried[liveKey{ic.Group, ic.Upstream, ic.Offset}] = res.Reason
			counts[res.Reason]++
			if l.count != nil {
				l.count(res.Reason.String())
			}
			bytes += n
			if emit {
				emitted++
			}
		}()
	}
	wg.Wait()
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", r, counts[r]))
	}
	l.logger.Info("exact translation of idle groups", "searched", len(todo), "emitted", emitted, "outcomes", strings.Join(parts, ", "), "record_bytes", bytes)
}
