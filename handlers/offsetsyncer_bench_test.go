package handlers

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// slowTarget is a target cluster whose every request takes latency: groups
// are spread over coordinators, and with serial set a coordinator answers
// one request at a time, as a single sarama connection does (its
// synchronous calls hold the broker's lock for the whole round trip).
type slowTarget struct {
	latency      time.Duration
	coordinators int
	serial       bool
	conns        []sync.Mutex
}

func newSlowTarget(latency time.Duration, coordinators int, serial bool) *slowTarget {
	return &slowTarget{latency: latency, coordinators: coordinators, serial: serial, conns: make([]sync.Mutex, coordinators+1)}
}

// request waits one round trip to the connection conn.
func (t *slowTarget) request(conn int) {
	if t.serial {
		t.conns[conn].Lock()
		defer t.conns[conn].Unlock()
	}
	time.Sleep(t.latency)
}

func (t *slowTarget) coordinator(group string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(group))
	return int(h.Sum32() % uint32(t.coordinators))
}

// each sends one request per coordinator of groups, concurrently.
func (t *slowTarget) each(groups []string) {
	seen := make(map[int]bool)
	for _, g := range groups {
		seen[t.coordinator(g)] = true
	}
	var wg sync.WaitGroup
	for c := range seen {
		wg.Go(func() { t.request(c) })
	}
	wg.Wait()
}

func (t *slowTarget) Describe(_ context.Context, groups []string) (map[string]targetgroup.Group, error) {
	t.each(groups)
	out := make(map[string]targetgroup.Group, len(groups))
	for _, g := range groups {
		out[g] = targetgroup.Group{State: targetgroup.StateNotFound}
	}
	return out, nil
}

func (t *slowTarget) Offsets(_ context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	t.each(groups)
	out := make(map[string]map[messages.TopicPartition]int64, len(groups))
	for _, g := range groups {
		out[g] = map[messages.TopicPartition]int64{}
	}
	return out, nil
}

func (t *slowTarget) ExistingPartitions(_ context.Context, topics []string) (map[messages.TopicPartition]bool, map[string]error) {
	t.request(t.coordinators) // any broker
	out := make(map[messages.TopicPartition]bool)
	for _, topic := range topics {
		for p := range int32(4) {
			out[messages.TopicPartition{Topic: topic, Partition: p}] = true
		}
	}
	return out, nil
}

func (t *slowTarget) Commit(_ context.Context, group string, offs map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	t.request(t.coordinator(group))
	out := make(map[messages.TopicPartition]targetgroup.Reason, len(offs))
	for tp := range offs {
		out[tp] = targetgroup.Committed
	}
	return out, nil
}

// dueSyncer is a caught-up syncer with groups due, two partitions each.
func dueSyncer(b *testing.B, target targetgroup.Groups, groups int) *OffsetSyncer {
	b.Helper()
	s := NewOffsetSyncer(OffsetSyncerConfig{Target: target, RetryInterval: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err := s.HandleCheckpoint(envelope.NewControl(envelope.Assigned, "cp", 0)); err != nil {
		b.Fatal(err)
	}
	if err := s.HandleCheckpoint(envelope.NewControl(envelope.CaughtUp, "cp", 0)); err != nil {
		b.Fatal(err)
	}
	var offset int64
	for i := range groups {
		for p := range int32(2) {
			cp := messages.Checkpoint{Group: fmt.Sprintf("group-%05d", i),
				TopicPartition: messages.TopicPartition{Topic: fmt.Sprintf("source.topic-%d", i%50), Partition: p},
				UpstreamOffset: 100, DownstreamOffset: 90}
			msg := envelope.FromRecord(envelope.Record{Topic: "cp", Offset: offset, Timestamp: time.UnixMilli(1000), Key: cp.Key(), Value: cp.Value()})
			offset++
			if err := s.HandleCheckpoint(msg); err != nil {
				b.Fatal(err)
			}
		}
	}
	return s
}

// BenchmarkOffsetSyncerRound times one Round over due groups against a
// target answering every request after 1 ms, its groups spread over three
// coordinators: "pipelined" lets a coordinator serve requests in parallel,
// "serial" serves one at a time per coordinator, like one sarama connection.
func BenchmarkOffsetSyncerRound(b *testing.B) {
	for _, groups := range []int{1000, 10000} {
		for _, serial := range []bool{false, true} {
			mode := "pipelined"
			if serial {
				mode = "serial"
			}
			b.Run(fmt.Sprintf("groups=%d/%s", groups, mode), func(b *testing.B) {
				target := newSlowTarget(time.Millisecond, 3, serial)
				for b.Loop() {
					b.StopTimer()
					s := dueSyncer(b, target, groups)
					b.StartTimer()
					s.Round(context.Background(), time.Unix(100, 0))
					b.StopTimer()
					if n := s.Pending(); n != 0 {
						b.Fatalf("%d groups still pending after the round", n)
					}
					b.StartTimer()
				}
			})
		}
	}
}
