package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/infra/targetgroups"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// BenchmarkCommitManyGroups times the commit stage against the real
// single-broker target: "commits" is 1,000 targetgroups Commit calls into
// 1,000 fresh groups (two partitions each) from as many workers as the
// stage's default concurrency; "round" is one OffsetSyncer.Round over 1,000
// due groups (describe, offset fetch, topic lookup, then the commits).
// conns=0 sends every commit over the client's one connection to the
// coordinator, as before the pool.
//
//	go test -run '^$' -bench CommitManyGroups -benchtime 3x ./pipeline/
func BenchmarkCommitManyGroups(b *testing.B) {
	const groups, workers = 1000, handlers.DefaultCommitConcurrency
	bed := kafkatest.Shared(b)
	topic := kafkatest.UniqueName(b, "orders")
	bed.Target.CreateTopic(b, topic, 2, nil)
	offsets := map[messages.TopicPartition]targetgroups.Offset{
		{Topic: topic, Partition: 0}: {Offset: 10}, {Topic: topic, Partition: 1}: {Offset: 20},
	}
	run := 0
	freshGroups := func() []string {
		run++
		names := make([]string, groups)
		for i := range names {
			names[i] = fmt.Sprintf("bench-%s-%d-%04d", topic, run, i)
		}
		return names
	}
	for _, conns := range []int{0, 1, 4, 8, 16} {
		newClient := func(b *testing.B) *targetgroups.Client {
			c, err := targetgroups.New(bed.Target.Client(b), slog.New(slog.DiscardHandler), targetgroups.WithCommitConnections(conns))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			return c
		}
		b.Run(fmt.Sprintf("commits/conns=%d", conns), func(b *testing.B) {
			c := newClient(b)
			for b.Loop() {
				b.StopTimer()
				next := make(chan string)
				var wg sync.WaitGroup
				var failed atomic.Int32
				for range workers {
					wg.Go(func() {
						for g := range next {
							if res, err := c.Commit(b.Context(), g, offsets); err != nil || res.Count(targetgroup.Committed) != len(offsets) {
								failed.Add(1)
							}
						}
					})
				}
				names := freshGroups()
				b.StartTimer()
				for _, g := range names {
					next <- g
				}
				close(next)
				wg.Wait()
				b.StopTimer()
				if n := failed.Load(); n != 0 {
					b.Fatalf("%d commits failed", n)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(groups)*float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
		b.Run(fmt.Sprintf("round/conns=%d", conns), func(b *testing.B) {
			target := targetgroups.SyncTarget{Client: newClient(b)}
			for b.Loop() {
				b.StopTimer()
				var committed atomic.Int32
				s := handlers.NewOffsetSyncer(handlers.OffsetSyncerConfig{
					Target: target, RetryInterval: time.Minute, Logger: slog.New(slog.DiscardHandler),
					Observer: countCommitted{n: &committed},
				})
				loadDue(b, s, freshGroups(), offsets)
				b.StartTimer()
				s.Round(b.Context(), time.Now())
				b.StopTimer()
				if n := s.Pending(); n != 0 || int(committed.Load()) != groups*len(offsets) {
					b.Fatalf("after the round: %d groups pending, %d partitions committed, want 0 and %d", n, committed.Load(), groups*len(offsets))
				}
				b.StartTimer()
			}
		})
	}
}

// countCommitted counts the partitions the commit stage committed.
type countCommitted struct {
	handlers.NopObserver
	n *atomic.Int32
}

func (c countCommitted) TargetResult(_ context.Context, _ string, _ messages.TopicPartition, r targetgroup.Reason, _, _ time.Time) {
	if r == targetgroup.Committed {
		c.n.Add(1)
	}
}

func (countCommitted) GateOpened() {}

// loadDue hands s a caught-up replay of a checkpoint of offsets for every
// group, so that all of them are due.
func loadDue(b *testing.B, s *handlers.OffsetSyncer, groups []string, offsets map[messages.TopicPartition]targetgroups.Offset) {
	b.Helper()
	if err := s.HandleCheckpoint(envelope.NewControl(envelope.Assigned, "cp", 0)); err != nil {
		b.Fatal(err)
	}
	if err := s.HandleCheckpoint(envelope.NewControl(envelope.CaughtUp, "cp", 0)); err != nil {
		b.Fatal(err)
	}
	var offset int64
	for _, g := range groups {
		for tp, o := range offsets {
			cp := messages.Checkpoint{Group: g, TopicPartition: tp, UpstreamOffset: o.Offset + 5, DownstreamOffset: o.Offset}
			msg := envelope.FromRecord(envelope.Record{Topic: "cp", Offset: offset, Timestamp: time.Now(), Key: cp.Key(), Value: cp.Value()})
			offset++
			if err := s.HandleCheckpoint(msg); err != nil {
				b.Fatal(err)
			}
		}
	}
}
