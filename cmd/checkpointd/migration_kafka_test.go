package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/handlers/shadow"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/pipeline"
)

// offsetWatch polls a target group's committed offsets every 100 ms and
// counts the times one went down.
type offsetWatch struct {
	mu      sync.Mutex
	last    map[messages.TopicPartition]int64
	lowered []string
	polls   int
	stop    context.CancelFunc
	done    chan struct{}
}

func watchOffsets(t *testing.T, admin sarama.ClusterAdmin, group string) *offsetWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &offsetWatch{last: map[messages.TopicPartition]int64{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			resp, err := admin.ListConsumerGroupOffsets(group, nil)
			if err != nil {
				continue
			}
			w.mu.Lock()
			w.polls++
			for topic, parts := range resp.Blocks {
				for p, b := range parts {
					if b.Err != sarama.ErrNoError || b.Offset < 0 {
						continue
					}
					tp := messages.TopicPartition{Topic: topic, Partition: p}
					if prev, ok := w.last[tp]; ok && b.Offset < prev {
						w.lowered = append(w.lowered, fmt.Sprintf("%s %d -> %d", tp, prev, b.Offset))
					}
					w.last[tp] = b.Offset
				}
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.stop(); <-w.done })
	return w
}

// backwards lists the records of the checkpoints topic whose target offset
// is below an earlier record's for the same partition (the test's source
// commits only go up, so none may).
func backwards(cps []checkpointRecord) []string {
	high := map[messages.TopicPartition]checkpointRecord{}
	var out []string
	for _, cp := range cps {
		if h, ok := high[cp.TopicPartition]; ok && cp.DownstreamOffset < h.DownstreamOffset {
			out = append(out, fmt.Sprintf("%s at offset %d: %d after %d (checkpointd's: %v after %v)",
				cp.TopicPartition, cp.offset, cp.DownstreamOffset, h.DownstreamOffset, cp.checkpointd, h.checkpointd))
			continue
		}
		high[cp.TopicPartition] = cp
	}
	return out
}

// TestMigrationRoundTripOnKafka follows docs/operations.md's migration
// runbook on real MM2 in a Connect worker: MM2 checkpointing, checkpointd
// in shadow mode beside it (agreeing, writing nothing), the switch (MM2's
// connector stopped, checkpointd run without --shadow takes over from
// MM2's checkpoints) and back (checkpointd stopped, a new
// MirrorCheckpointConnector goes on from checkpointd's). Over the whole
// run no checkpoint goes backwards in the checkpoints topic and the target
// group's offsets, polled every 100 ms, never go down.
func TestMigrationRoundTripOnKafka(t *testing.T) {
	const topic, group = "orders", "app"
	m := startMM2Bed(t, "mgsrc", "mgtgt", topic, group)
	bed := m.bed
	watch := watchOffsets(t, bed.Target.Admin(t), group)
	p0, p1 := messages.TopicPartition{Topic: topic, Partition: 0}, messages.TopicPartition{Topic: topic, Partition: 1}
	props := map[string]string{
		"source.cluster.alias": bed.Source.Alias, "target.cluster.alias": bed.Target.Alias,
		"source.cluster.bootstrap.servers": bed.Source.Bootstrap, "target.cluster.bootstrap.servers": bed.Target.Bootstrap,
		"groups": group, "topics": topic, "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1",
		"checkpoints.topic.replication.factor": "1", "checkpointd.commit.source": "offsets-log",
		"checkpointd.metrics.address": "127.0.0.1:0",
	}
	round := func() {
		t.Helper()
		bed.Source.Produce(t, topic, 0, 20)
		bed.Source.Produce(t, topic, 1, 20)
		m.mm2.WaitReplicated(t, topic)
	}

	// 1. Shadow beside MM2.
	run := startShadow(t, props)
	bed.Source.CommitOffsets(t, group, map[messages.TopicPartition]int64{p0: 100, p1: 120})
	m.waitMM2(t)
	var rep pipeline.ShadowReport
	run.await(t, "agreement", 60*time.Second, func() error {
		var err error
		rep, err = run.report(t)
		if err != nil {
			return err
		}
		if len(rep.Rows) != 2 || rep.Counts.ByStatus[shadow.Equal]+rep.Counts.ByStatus[shadow.Ahead] != 2 {
			return fmt.Errorf("report %+v", rep)
		}
		return nil
	})
	run.stop(t)
	cps := m.checkpoints(t)
	for _, cp := range cps {
		if cp.checkpointd {
			t.Errorf("shadow mode wrote a checkpoint: %+v", cp)
		}
	}
	t.Logf("1. shadow: %+v, withheld %v; %d checkpoints in the topic, all MM2's", rep.Counts.ByStatus, rep.Withheld, len(cps))
	mm2Records := len(cps)

	// 2. Switch: MM2's connector stopped first, then checkpointd for real.
	if err := m.conn.Stop(); err != nil {
		t.Fatalf("stop MM2's checkpoint connector: %v", err)
	}
	prod := startCheckpointd(t, props)
	round()
	bed.Source.CommitOffsets(t, group, map[messages.TopicPartition]int64{p0: 210, p1: 215})
	kafkatest.WaitFor(t, 60*time.Second, "checkpointd's checkpoints and the target group at them", func() error {
		all := m.checkpoints(t)
		last := latest(all)
		got := bed.Target.CommittedOffsets(t, group)
		for _, cp := range last {
			if !cp.checkpointd || got[cp.TopicPartition] != cp.DownstreamOffset {
				return fmt.Errorf("latest checkpoints %+v, target group %v", last, got)
			}
		}
		if len(last) != 2 {
			return fmt.Errorf("latest checkpoints %+v", last)
		}
		return nil
	})
	prod.stop(t)
	cps = m.checkpoints(t)
	ours := len(cps) - mm2Records
	t.Logf("2. switch: checkpointd wrote %d checkpoints; latest %+v", ours, latest(cps))

	// 3. Back to MM2: checkpointd stopped first, then a new connector.
	m.startConnector(t)
	round()
	bed.Source.CommitOffsets(t, group, map[messages.TopicPartition]int64{p0: 230, p1: 235})
	kafkatest.WaitFor(t, 60*time.Second, "MM2's checkpoints again", func() error {
		all := m.checkpoints(t)
		if !slices.ContainsFunc(all[len(cps):], func(cp checkpointRecord) bool { return !cp.checkpointd }) {
			return errors.New("no MM2 checkpoint after checkpointd's")
		}
		return nil
	})
	m.waitMM2(t)
	all := m.checkpoints(t)
	t.Logf("3. back: MM2 wrote %d checkpoints after checkpointd's; latest %+v", len(all)-len(cps), latest(all))

	back := backwards(all)
	if len(back) > 0 {
		t.Errorf("%d checkpoints went backwards:\n%v", len(back), back)
	}
	watch.stop()
	<-watch.done
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if len(watch.lowered) > 0 {
		t.Errorf("target group offsets lowered %d times: %v", len(watch.lowered), watch.lowered)
	}
	t.Logf("round trip: %d checkpoint records (MM2 %d, checkpointd %d, MM2 again %d), %d backwards; target group polled %d times, %d lowered; final %v",
		len(all), mm2Records, ours, len(all)-len(cps), len(back), watch.polls, len(watch.lowered), watch.last)
}
