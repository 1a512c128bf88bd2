package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/handlers/shadow"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/pipeline"
)

// shadowRun is `checkpointd run` (with --shadow, or without) in the test
// process.
type shadowRun struct {
	stderr syncBuffer
	done   chan error
	cancel context.CancelFunc
	base   string // http://host:port of its health server
}

// startShadow runs `checkpointd run --shadow` with props and waits for its
// health server's address.
func startShadow(t *testing.T, props map[string]string) *shadowRun {
	t.Helper()
	return startCheckpointd(t, props, "--shadow")
}

// startCheckpointd runs `checkpointd run` with props and flags and waits
// for its health server's address.
func startCheckpointd(t *testing.T, props map[string]string, flags ...string) *shadowRun {
	t.Helper()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s: %q\n", k, props[k])
	}
	path := filepath.Join(t.TempDir(), "checkpointd.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &shadowRun{done: make(chan error, 1), cancel: cancel}
	var stdout syncBuffer
	args := append(append([]string{"run"}, flags...), "--config", path)
	go func() { r.done <- dispatch(ctx, args, &stdout, &r.stderr) }()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Logf("checkpointd's log:\n%s", lastLines(r.stderr.String(), 80))
		}
	})
	addr := regexp.MustCompile(`serving metrics and health.* address=(127\.0\.0\.1:\d+)`)
	r.await(t, "the health server", 30*time.Second, func() error {
		m := addr.FindStringSubmatch(r.stderr.String())
		if m == nil {
			return errors.New("no address logged")
		}
		r.base = "http://" + m[1]
		return nil
	})
	return r
}

func (r *shadowRun) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		t.Errorf("checkpointd run: %v", err)
	}
}

func (r *shadowRun) await(t *testing.T, what string, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case err := <-r.done:
			r.cancel = nil
			t.Fatalf("checkpointd ended waiting for %s: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v for %s: %v", timeout, what, err)
		}
	}
}

// report runs `checkpointd shadow-report --format json` against the run;
// the error is shadow-report's, or why there is no report.
func (r *shadowRun) report(t *testing.T) (pipeline.ShadowReport, error) {
	t.Helper()
	var stdout, stderr strings.Builder
	err := dispatch(context.Background(), []string{"shadow-report", "--url", r.base, "--format", "json"}, &stdout, &stderr)
	var reports []pipeline.ShadowReport
	if jerr := json.Unmarshal([]byte(stdout.String()), &reports); jerr != nil || len(reports) != 1 {
		// Before the pipeline is built /shadow is 404.
		return pipeline.ShadowReport{}, fmt.Errorf("shadow-report output %q (%v), error %w", stdout.String(), jerr, err)
	}
	return reports[0], err
}

// table is `checkpointd shadow-report --all` as a person reads it.
func (r *shadowRun) table(t *testing.T) (string, error) {
	t.Helper()
	var stdout, stderr strings.Builder
	err := dispatch(context.Background(), []string{"shadow-report", "--url", r.base, "--all"}, &stdout, &stderr)
	return stdout.String(), err
}

var mm2Internal = regexp.MustCompile(`^mm2-(offsets|configs|status)\..*\.internal$`)

// targetSnapshot is everything on the target a write of checkpointd's would
// change: the topics, every partition's end offset, and the group's offsets.
func targetSnapshot(t *testing.T, c *kafkatest.Cluster, group string) (topics []string, state string) {
	t.Helper()
	listed, err := c.Admin(t).ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	topics = slices.Sorted(maps.Keys(listed))
	var b strings.Builder
	for _, name := range topics {
		if mm2Internal.MatchString(name) {
			continue // MM2's own Connect topics: its source connector writes them
		}
		ends := c.EndOffsets(t, name)
		for _, p := range slices.Sorted(maps.Keys(ends)) {
			fmt.Fprintf(&b, "%s/%d end %d\n", name, p, ends[p])
		}
	}
	offsets := c.CommittedOffsets(t, group)
	for _, tp := range slices.SortedFunc(maps.Keys(offsets), func(a, b messages.TopicPartition) int { return strings.Compare(a.String(), b.String()) }) {
		fmt.Fprintf(&b, "group %s %s at %d\n", group, tp, offsets[tp])
	}
	return topics, b.String()
}

// TestShadowBesideMM2OnKafka runs MM2's MirrorCheckpointConnector in a
// Connect worker (offset syncs from a MirrorMaker 2 source connector) and
// checkpointd in shadow mode beside it, on a bed of its own (the check of
// the target's topics must not see other tests'):
//   - with MM2 checkpointing, the report agrees (every pair equal, the
//     target groups at MM2's offsets), checkpointd had each offset earlier,
//     and nothing of checkpointd's is on the target: no record with its
//     commit-time header in the checkpoints topic, no commit log or shard
//     topic, no topic at all that was not there before it started;
//   - with MM2's connector stopped, new source commits leave every end
//     offset, the topic list and the target group's offsets as they were,
//     while checkpointd reports itself ahead;
//   - a planted MM2 checkpoint (a record produced with a higher offset for
//     the same source commit) is reported as unexplained and makes
//     shadow-report fail.
func TestShadowBesideMM2OnKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs real Kafka")
	}
	const topic, group = "orders", "app"
	m := startMM2Bed(t, "shsrc", "shtgt", topic, group)
	bed, mm2, conn := m.bed, m.mm2, m.conn
	p0, p1 := messages.TopicPartition{Topic: topic, Partition: 0}, messages.TopicPartition{Topic: topic, Partition: 1}
	remote0 := messages.TopicPartition{Topic: bed.RemoteTopic(topic), Partition: 0}
	waitMM2 := func() { t.Helper(); m.waitMM2(t) }
	topicsBefore, _ := targetSnapshot(t, bed.Target, group)
	mm2Before := len(bed.Target.ReadAll(t, bed.CheckpointsTopic()))

	run := startShadow(t, map[string]string{
		"source.cluster.alias": bed.Source.Alias, "target.cluster.alias": bed.Target.Alias,
		"source.cluster.bootstrap.servers": bed.Source.Bootstrap, "target.cluster.bootstrap.servers": bed.Target.Bootstrap,
		"groups": group, "topics": topic, "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1",
		"checkpoints.topic.replication.factor": "1", "checkpointd.commit.source": "offsets-log",
		"checkpointd.metrics.address": "127.0.0.1:0",
	})
	// agree waits until every pair is equal or checkpointd is ahead, never
	// behind, and the target group is where MM2 put it.
	agree := func(what string) pipeline.ShadowReport {
		t.Helper()
		var rep pipeline.ShadowReport
		run.await(t, what, 60*time.Second, func() error {
			var err error
			if rep, err = run.report(t); err != nil {
				return err
			}
			if len(rep.Rows) != 2 || rep.Counts.ByStatus[shadow.Equal]+rep.Counts.ByStatus[shadow.Ahead] != 2 {
				return fmt.Errorf("report %+v", rep)
			}
			for _, r := range rep.Rows {
				if r.Target != r.MM2 {
					return fmt.Errorf("target group not read yet: %+v", r)
				}
			}
			return nil
		})
		t.Logf("%s: %+v", what, rep.Rows)
		return rep
	}
	agree("agreement on the checkpoints MM2 wrote before")
	var earlier []float64
	for _, c := range []map[messages.TopicPartition]int64{{p0: 100, p1: 120}, {p0: 150, p1: 160}} {
		bed.Source.CommitOffsets(t, group, c)
		waitMM2()
		rep := agree(fmt.Sprintf("agreement at %v", c))
		for _, r := range rep.Rows {
			if r.EarlierSeconds != nil {
				earlier = append(earlier, *r.EarlierSeconds)
			}
		}
	}
	rep, err := run.report(t)
	if err != nil {
		t.Fatalf("shadow-report on agreement: %v", err)
	}
	out, err := run.table(t)
	if err != nil {
		t.Fatalf("shadow-report --all: %v\n%s", err, out)
	}
	t.Logf("shadow-report with MM2 checkpointing:\n%s", out)
	t.Logf("checkpointd earlier than MM2 by (s): %v", earlier)
	all := bed.Target.ReadAll(t, bed.CheckpointsTopic())
	if n := len(all) - mm2Before; rep.Withheld["checkpoint"] < int64(n) || n == 0 {
		t.Errorf("withheld %v: checkpointd decided fewer than the %d checkpoints MM2 wrote meanwhile", rep.Withheld, n)
	}
	var mm2Records int
	for _, m := range all {
		for _, h := range m.Headers {
			if string(h.Key) == envelope.HeaderCommitTime {
				t.Errorf("a checkpoint record of checkpointd's on the target: offset %d", m.Offset)
			}
		}
		mm2Records++
	}
	topicsNow, _ := targetSnapshot(t, bed.Target, group)
	if !slices.Equal(topicsNow, topicsBefore) {
		t.Errorf("target topics changed while checkpointd ran in shadow mode:\nbefore %v\nnow    %v", topicsBefore, topicsNow)
	}
	for _, absent := range []string{bed.Source.Alias + ".checkpointd-commits.internal", bed.Source.Alias + ".checkpointd-shards.internal"} {
		if slices.Contains(topicsNow, absent) {
			t.Errorf("shadow mode created %s", absent)
		}
	}
	t.Logf("checkpoints topic: %d records, all MM2's; target topics unchanged (%d)", mm2Records, len(topicsNow))

	// MM2 stops: whatever checkpointd wrote now would show.
	if err := conn.Stop(); err != nil {
		t.Fatalf("stop MM2's checkpoint connector: %v", err)
	}
	bed.Source.Produce(t, topic, 0, 20)
	bed.Source.Produce(t, topic, 1, 20)
	mm2.WaitReplicated(t, topic)
	_, before := targetSnapshot(t, bed.Target, group)
	withheld := rep.Withheld["checkpoint"]
	bed.Source.CommitOffsets(t, group, map[messages.TopicPartition]int64{p0: 220, p1: 220})
	run.await(t, "checkpointd ahead of the stopped MM2", 60*time.Second, func() error {
		rep, _ := run.report(t)
		if rep.Counts.ByStatus[shadow.Ahead] == 0 || rep.Withheld["checkpoint"] == withheld {
			return fmt.Errorf("report %+v", rep)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // three target sync intervals
	_, after := targetSnapshot(t, bed.Target, group)
	if after != before {
		t.Errorf("the target changed with checkpointd in shadow mode alone:\nbefore\n%s\nafter\n%s", before, after)
	}
	rep, err = run.report(t)
	if err != nil {
		t.Fatalf("shadow-report with checkpointd ahead: %v", err)
	}
	t.Logf("with MM2 stopped: %+v withheld %v; target unchanged:\n%s", rep.Counts, rep.Withheld, after)

	// Planted: MM2's checkpoint for the commit at 220, altered higher.
	var ours int64
	for _, r := range rep.Rows {
		if r.Topic == remote0.Topic && r.Partition == 0 {
			ours = r.Checkpointd
		}
	}
	planted := messages.Checkpoint{Group: group, TopicPartition: remote0, UpstreamOffset: 220, DownstreamOffset: ours + 5}
	produce(t, bed.Target, bed.CheckpointsTopic(), planted.Key(), planted.Value())
	run.await(t, "the planted disagreement reported", 30*time.Second, func() error {
		rep, err := run.report(t)
		if !errors.Is(err, errDisagrees) || rep.Counts.Unexplained != 1 {
			return fmt.Errorf("report %+v, error %v", rep, err)
		}
		return nil
	})
	out, err = run.table(t)
	if !errors.Is(err, errDisagrees) || !strings.Contains(out, shadow.ReasonLowerTranslation+" (unexplained)") {
		t.Errorf("shadow-report on the planted record: error %v\n%s", err, out)
	}
	t.Logf("shadow-report with the planted record (exit error %q):\n%s", err, out)
}

// mm2Bed is a bed of its own with MirrorMaker 2's source connector
// mirroring topic (2 partitions, 200 records each) and MM2's
// MirrorCheckpointConnector in a Connect worker checkpointing group,
// committed at 50 and 60 on the source.
type mm2Bed struct {
	bed          *kafkatest.Bed
	mm2, conn    *kafkatest.MM2
	topic, group string
}

func startMM2Bed(t *testing.T, src, tgt, topic, group string) *mm2Bed {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs real Kafka")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bed, err := kafkatest.StartBed(ctx, kafkatest.BedOptions{SourceAlias: src, TargetAlias: tgt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.Close() })
	bed.Source.CreateTopic(t, topic, 2, nil)
	lagMax := int64(0)
	mm2 := bed.StartMM2(t, kafkatest.MM2Options{Topics: topic, Groups: "no-group-is-named-like-this", OffsetLagMax: &lagMax})
	// In rounds, each replicated before the next: MM2 writes at least an
	// offset sync a round per partition, so every commit below translates.
	for range 10 {
		bed.Source.Produce(t, topic, 0, 20)
		bed.Source.Produce(t, topic, 1, 20)
		mm2.WaitReplicated(t, topic)
	}
	bed.Source.CommitOffsets(t, group, map[messages.TopicPartition]int64{{Topic: topic, Partition: 0}: 50, {Topic: topic, Partition: 1}: 60})
	// As an operator would: MM2's checkpoint store then loads at start.
	bed.Target.CreateTopic(t, bed.CheckpointsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	m := &mm2Bed{bed: bed, mm2: mm2, topic: topic, group: group}
	m.startConnector(t)
	m.waitMM2(t)
	return m
}

// startConnector starts MM2's checkpoint connector (again).
func (m *mm2Bed) startConnector(t *testing.T) {
	t.Helper()
	m.conn = m.bed.StartCheckpointConnector(t, kafkatest.CheckpointConnectorOptions{Groups: m.group, Topics: m.topic})
	t.Logf("MM2's checkpoint connector running in %s", m.conn.ReadyIn.Round(time.Millisecond))
}

// checkpoints reads the checkpoints topic: the group's records in order.
func (m *mm2Bed) checkpoints(t *testing.T) []checkpointRecord {
	t.Helper()
	var out []checkpointRecord
	for _, r := range m.bed.Target.ReadAll(t, m.bed.CheckpointsTopic()) {
		cp, err := messages.DecodeCheckpoint(r.Key, r.Value)
		if err != nil || cp.Group != m.group {
			continue
		}
		ours := false
		for _, h := range r.Headers {
			ours = ours || string(h.Key) == envelope.HeaderCommitTime
		}
		out = append(out, checkpointRecord{Checkpoint: cp, offset: r.Offset, checkpointd: ours})
	}
	return out
}

// checkpointRecord is one record of the checkpoints topic; checkpointd: it
// carries checkpointd's commit-time header (MM2's records carry none).
type checkpointRecord struct {
	messages.Checkpoint
	offset      int64
	checkpointd bool
}

func latest(cps []checkpointRecord) map[messages.TopicPartition]checkpointRecord {
	last := map[messages.TopicPartition]checkpointRecord{}
	for _, cp := range cps {
		last[cp.TopicPartition] = cp
	}
	return last
}

// waitMM2 waits for MM2's checkpoints of both partitions and for the target
// group to be at them. MM2 checkpoints a commit only where its translation
// moves (two commits may translate to one offset with the syncs it keeps),
// so it first gives MM2 three emit intervals.
func (m *mm2Bed) waitMM2(t *testing.T) {
	t.Helper()
	time.Sleep(3 * time.Second)
	kafkatest.WaitFor(t, 60*time.Second, "MM2's checkpoints and target group", func() error {
		last := latest(m.checkpoints(t))
		if len(last) != 2 {
			return fmt.Errorf("MM2's checkpoints %v", last)
		}
		got := m.bed.Target.CommittedOffsets(t, m.group)
		for tp, cp := range last {
			if got[tp] != cp.DownstreamOffset {
				return fmt.Errorf("target group at %v, MM2's checkpoints %v", got, last)
			}
		}
		return nil
	})
}
