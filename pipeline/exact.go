package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/checkpointd/checkpointd/handlers/exact"
	"github.com/checkpointd/checkpointd/handlers/translate"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/infra/recordfetch"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// ExactRow is what an exact translation made of one checkpoint.
type ExactRow struct {
	// Checkpoint is the translation to use: the exact one, or the
	// checkpoint as read when the search fell back.
	Checkpoint messages.Checkpoint
	// MM2 is the checkpoint as read from the checkpoints topic (MM2's rule).
	MM2 messages.Checkpoint
	// Upstream is the source partition (zero when the group has no commit
	// on it) and Committed the group's committed offset there now, -1 for
	// none.
	Upstream  messages.TopicPartition
	Committed int64
	Exact     bool
	Reason    exact.Reason // why not exact; ReasonNone when Exact
	Detail    string
	Bytes     int64         // record bytes fetched for it (0 when a search of the same offset was reused)
	Took      time.Duration // how long its search took, waits for a search of the same offset included
}

// ExactSummary counts an exact translation's outcomes.
type ExactSummary struct {
	Partitions int
	Exact      int
	Fallbacks  map[exact.Reason]int
	Bytes      int64
	Took       time.Duration // the whole run's wall time
}

// Summarize counts rows, of a run that took took.
func Summarize(rows []ExactRow, took time.Duration) ExactSummary {
	s := ExactSummary{Fallbacks: map[exact.Reason]int{}, Took: took}
	for _, r := range rows {
		s.Partitions++
		s.Bytes += r.Bytes
		if r.Exact {
			s.Exact++
		} else {
			s.Fallbacks[r.Reason]++
		}
	}
	return s
}

// String is the summary on one line, fallbacks by reason.
func (s ExactSummary) String() string {
	var fb []string
	for _, r := range slices.Sorted(maps.Keys(s.Fallbacks)) {
		fb = append(fb, fmt.Sprintf("%s %d", r, s.Fallbacks[r]))
	}
	out := fmt.Sprintf("exact: %d of %d partitions exact, %d record bytes read, %v in all", s.Exact, s.Partitions, s.Bytes, s.Took.Round(time.Millisecond))
	if len(fb) > 0 {
		out += "; kept MM2's translation: " + strings.Join(fb, ", ")
	}
	return out
}

// ExactCheckpoints refines the checkpoints cps (from ReadCheckpoints) with
// the records themselves: for each, it reads the group's committed offset on
// the source now and finds where that record is on the target
// (exact.Locate), between the offset syncs around it. Where the records
// prove a position the row's Checkpoint carries it, with the committed
// offset as its upstream offset; elsewhere the checkpoint stays as read,
// with the reason. The rows follow cps's order. It needs READ on the
// mirrored topics of both clusters; without it every row says read_denied.
func ExactCheckpoints(ctx context.Context, cfg *config.Config, logger *slog.Logger, cps []messages.Checkpoint) ([]ExactRow, error) {
	var groups []string
	for _, cp := range cps {
		if !slices.Contains(groups, cp.Group) {
			groups = append(groups, cp.Group)
		}
	}
	committed, err := sourceCommits(cfg, groups)
	if err != nil {
		return nil, err
	}
	ix, err := readSyncIndex(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	src, closeSrc, err := recordReader(cfg, cfg.Source, config.SourceConsumer, cfg.SourceAlias)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	tgt, closeTgt, err := recordReader(cfg, cfg.Target, config.TargetConsumer, cfg.TargetAlias)
	if err != nil {
		return nil, err
	}
	defer closeTgt()

	// A checkpoint names the target partition; the commit, the source one.
	type key struct {
		group string
		tp    messages.TopicPartition
	}
	upstream := map[key]messages.OffsetsRecord{}
	for _, c := range committed {
		renamed := messages.TopicPartition{Topic: messages.DownstreamTopic(cfg.Policy, cfg.SourceAlias, cfg.TargetAlias, c.Topic), Partition: c.Partition}
		upstream[key{c.Group, renamed}] = c
	}
	s := &exactSearch{ix: ix, source: src, target: tgt, budget: cfg.ExactFetchMaxBytes}
	rows := make([]ExactRow, len(cps))
	sem := make(chan struct{}, exactSearches)
	var wg sync.WaitGroup
	for i, cp := range cps {
		row := ExactRow{Checkpoint: cp, MM2: cp, Committed: -1}
		c, ok := upstream[key{cp.Group, cp.TopicPartition}]
		if !ok {
			row.Reason, row.Detail = exact.ReasonNoCommit, "the group has no committed offset on the source partition"
			rows[i] = row
			continue
		}
		row.Upstream, row.Committed = c.TopicPartition, c.Offset
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			res, bytes := s.locate(ctx, c.TopicPartition, cp.TopicPartition, c.Offset)
			row.Took, row.Bytes = time.Since(start), bytes
			if res.Exact() {
				row.Exact = true
				row.Checkpoint.UpstreamOffset, row.Checkpoint.DownstreamOffset = c.Offset, res.Downstream
			} else {
				row.Reason, row.Detail = res.Reason, res.Detail
				logger.Debug("exact translation fell back to MM2's", "group", cp.Group, "topic", c.Topic, "partition", c.Partition,
					"committed", c.Offset, "reason", res.Reason.String(), "detail", res.Detail)
			}
			rows[i] = row
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

// exactSearches is how many searches run at once: each waits on a few
// round trips to the brokers.
const exactSearches = 16

// readSyncIndex reads the offset-sync topic to its end into a translation
// index, keeping every sync MM2's store would keep in a running service.
func readSyncIndex(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*translate.Index, error) {
	syncs := cfg.OffsetSyncs()
	sc, err := cfg.SaramaConfig(syncs.Reader)
	if err != nil {
		return nil, fmt.Errorf("offset-syncs consumer config: %w", err)
	}
	ix := translate.NewIndex(translate.Options{CheckpointsLoaded: true})
	rc := kafkalog.ReaderConfig{Brokers: syncs.Cluster.BootstrapServers, Sarama: sc, Cluster: syncs.Alias, Logger: logger}
	err = kafkalog.ReadLog(ctx, rc, syncs.Topic, false, func(r envelope.Record) error {
		if s, err := messages.DecodeOffsetSync(r.Key, r.Value); err == nil && !r.Tombstone() {
			ix.Apply(s.TopicPartition, s.UpstreamOffset, s.DownstreamOffset)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", syncs.Topic, err)
	}
	ix.OpenGate()
	return ix, nil
}

func recordReader(cfg *config.Config, cluster config.ClusterConfig, role config.Role, alias string) (*recordfetch.Reader, func(), error) {
	sc, err := cfg.SaramaConfig(role)
	if err != nil {
		return nil, nil, fmt.Errorf("%s consumer config: %w", alias, err)
	}
	client, err := kafkalog.NewClient(cluster.BootstrapServers, sc)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to cluster %q at %v: %w", alias, cluster.BootstrapServers, err)
	}
	return recordfetch.New(client, alias), func() { _ = client.Close() }, nil
}

type exactKey struct {
	tp        messages.TopicPartition
	committed int64
}

// exactSearch runs exact.Locate over records it reads, reusing the answer
// for groups at the same offset of a partition (idle groups at the end).
// Its methods may be called concurrently.
type exactSearch struct {
	ix             *translate.Index
	source, target *recordfetch.Reader
	budget         int64

	mu   sync.Mutex
	done map[exactKey]*exactOnce
	ends map[messages.TopicPartition]*endsOnce
}

type exactOnce struct {
	once  sync.Once
	res   exact.Result
	bytes int64
}

// endsOnce is a partition's end offsets, the target's read before the
// source's: then every target record below the one came from a source
// record below the other.
type endsOnce struct {
	once                 sync.Once
	target, source       int64
	targetErr, sourceErr error
}

// locate answers for committed on the source partition up, whose copy is
// the target partition down, and the record bytes it read (0 for an answer
// another search of the same offset read).
func (s *exactSearch) locate(ctx context.Context, up, down messages.TopicPartition, committed int64) (exact.Result, int64) {
	s.mu.Lock()
	if s.done == nil {
		s.done = map[exactKey]*exactOnce{}
	}
	k := exactKey{up, committed}
	e, seen := s.done[k]
	if !seen {
		e = &exactOnce{}
		s.done[k] = e
	}
	s.mu.Unlock()
	e.once.Do(func() {
		budget := &recordfetch.Budget{Limit: s.budget}
		e.res = s.search(ctx, up, down, committed, budget)
		e.bytes = budget.Used
	})
	if seen {
		return e.res, 0
	}
	return e.res, e.bytes
}

// endsOf returns the partitions' end offsets, read once per run.
func (s *exactSearch) endsOf(up, down messages.TopicPartition) (target, source int64, err error) {
	s.mu.Lock()
	if s.ends == nil {
		s.ends = map[messages.TopicPartition]*endsOnce{}
	}
	e, ok := s.ends[up]
	if !ok {
		e = &endsOnce{}
		s.ends[up] = e
	}
	s.mu.Unlock()
	e.once.Do(func() {
		if e.target, e.targetErr = s.target.End(down.Topic, down.Partition); e.targetErr == nil {
			e.source, e.sourceErr = s.source.End(up.Topic, up.Partition)
		}
	})
	return e.target, e.source, cmp.Or(e.targetErr, e.sourceErr)
}

func (s *exactSearch) search(ctx context.Context, up, down messages.TopicPartition, committed int64, budget *recordfetch.Budget) exact.Result {
	t, upper, hasUpper := s.ix.Bounds(up, committed)
	if t.Outcome != translate.Translated {
		return exact.Result{Downstream: -1, Reason: exact.ReasonNoSync, Detail: "MM2's rule has no translation: " + t.Reason.String()}
	}
	q := exact.Query{Committed: committed, Lower: t.Sync, Upper: upper, HasUpper: hasUpper}
	if !exact.NeedsRecords(committed, t.Sync) {
		return exact.Locate(q)
	}
	var err error
	if q.TargetEnd, q.SourceEnd, err = s.endsOf(up, down); err != nil {
		return fetchFallback(err)
	}
	if bound := q.SourceBound(); bound > q.Lower.Upstream {
		recs, err := s.source.Range(ctx, up.Topic, up.Partition, q.Lower.Upstream, bound, budget)
		if err != nil {
			return fetchFallback(err)
		}
		q.Source = records(recs)
	}
	limit := q.TargetEnd
	if hasUpper {
		limit = min(limit, upper.Downstream)
	}
	q.TargetRead = q.Lower.Downstream
	for {
		res := exact.Locate(q)
		if !res.More {
			return res
		}
		recs, next, err := s.target.Fetch(ctx, down.Topic, down.Partition, q.TargetRead, limit, budget)
		if err != nil {
			return fetchFallback(err)
		}
		if next <= q.TargetRead {
			return exact.Result{Downstream: -1, Reason: exact.ReasonFetchFailed,
				Detail: fmt.Sprintf("partition %d of %s on the target: nothing at offset %d below %d", down.Partition, down.Topic, q.TargetRead, limit)}
		}
		q.Target = append(q.Target, records(recs)...)
		q.TargetRead = next
	}
}

// fetchFallback names the reason a failed read gives.
func fetchFallback(err error) exact.Result {
	r := exact.ReasonFetchFailed
	switch {
	case errors.Is(err, recordfetch.ErrReadDenied):
		r = exact.ReasonReadDenied
	case errors.Is(err, recordfetch.ErrBudgetExceeded):
		r = exact.ReasonBudgetExceeded
	case errors.Is(err, recordfetch.ErrOutOfRange):
		r = exact.ReasonTopicRecreated
	}
	return exact.Result{Downstream: -1, Reason: r, Detail: err.Error()}
}

// records converts what recordfetch read into what exact compares.
func records(in []recordfetch.Record) []exact.Record {
	out := make([]exact.Record, len(in))
	for i, r := range in {
		out[i] = exact.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value,
			Transactional: r.Transactional, Control: r.Control, LogAppendTime: r.LogAppendTime}
		if len(r.Headers) > 0 {
			out[i].Headers = make([]exact.Header, len(r.Headers))
			for j, h := range r.Headers {
				out[i].Headers[j] = exact.Header{Key: h.Key, Value: h.Value}
			}
		}
	}
	return out
}

// ExactPlan returns the checkpoints the rows translate to, in their order.
func ExactPlan(rows []ExactRow) []messages.Checkpoint {
	out := make([]messages.Checkpoint, len(rows))
	for i, r := range rows {
		out[i] = r.Checkpoint
	}
	return out
}
