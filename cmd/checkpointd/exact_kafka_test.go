package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// exactBed is a topic real MM2 mirrors from the shared source to the shared
// target under aliases of the test's own, with MM2 writing offset syncs and
// checkpoints, and a checkpointd config for the same flow.
type exactBed struct {
	bed        *kafkatest.Bed
	suffix     string
	src, tgt   string // aliases
	topic      string // on the source
	remote     string // on the target
	partitions int32
	groupRe    string
	cfgPath    string
	mm2        *kafkatest.MM2
	ends       []int64 // source end offsets, as produced
	producer   sarama.SyncProducer
	// noMM2Checkpoints, set by setup, leaves the checkpoints to checkpointd.
	noMM2Checkpoints bool
}

// newExactBed mirrors the topic events-<suffix>, made with partitions, and
// those setup makes (named anything ending in the suffix) before MM2 starts.
func newExactBed(t *testing.T, partitions int32, setup func(e *exactBed)) *exactBed {
	t.Helper()
	bed := kafkatest.Shared(t)
	suffix := kafkatest.UniqueName(t, "")
	suffix = suffix[len(suffix)-8:]
	e := &exactBed{bed: bed, suffix: suffix, src: "xa" + suffix, tgt: "xb" + suffix, topic: "events-" + suffix,
		partitions: partitions, groupRe: "ex-" + suffix + "-.*", ends: make([]int64, partitions)}
	e.remote = e.src + "." + e.topic
	bed.Source.CreateTopic(t, e.topic, partitions, nil)
	if setup != nil {
		setup(e)
	}
	cfg := bed.Source.SaramaConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer(bed.Source.Brokers(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	e.producer = p
	e.mm2 = bed.StartMM2(t, kafkatest.MM2Options{SourceAlias: e.src, TargetAlias: e.tgt, Topics: ".*-" + suffix, Groups: e.groupRe,
		EmitCheckpoints: !e.noMM2Checkpoints, CheckpointInterval: time.Second})
	e.cfgPath = filepath.Join(t.TempDir(), "c.yaml")
	conf := fmt.Sprintf("source.cluster.alias: %q\ntarget.cluster.alias: %q\nsource.cluster.bootstrap.servers: %q\ntarget.cluster.bootstrap.servers: %q\n",
		e.src, e.tgt, bed.Source.Bootstrap, bed.Target.Bootstrap)
	if err := os.WriteFile(e.cfgPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *exactBed) group(i int) string { return strings.TrimSuffix(e.groupRe, ".*") + strconv.Itoa(i) }

// produce writes n records to partition p whose values name their source
// offset, so a reader of the target knows which source record it holds.
func (e *exactBed) produce(t *testing.T, p int32, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		off := e.ends[p] + int64(i)
		msgs[i] = &sarama.ProducerMessage{Topic: e.topic, Partition: p, Key: sarama.StringEncoder(fmt.Sprintf("k%d", off%7)),
			Value: sarama.StringEncoder(fmt.Sprintf("%d/%d", p, off))}
	}
	if err := e.producer.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		if m.Offset != e.ends[p]+int64(i) {
			t.Fatalf("record %d of partition %d landed at %d, want %d", i, p, m.Offset, e.ends[p]+int64(i))
		}
	}
	e.ends[p] += int64(n)
}

// waitReplicated waits until the target has every source record.
func (e *exactBed) waitReplicated(t *testing.T) { e.waitCopied(t, e.remote, e.ends) }

// waitCopied waits until the remote topic's partitions end at ends or later.
func (e *exactBed) waitCopied(t *testing.T, remote string, ends []int64) {
	t.Helper()
	kafkatest.WaitFor(t, 90*time.Second, "MM2 to copy every record of "+remote, func() error {
		got := e.bed.Target.EndOffsets(t, remote)
		for p := range ends {
			if got[int32(p)] < ends[p] {
				return fmt.Errorf("target ends %v, source %v", got, ends)
			}
		}
		return nil
	})
}

// waitCheckpoints waits until MM2's checkpoints of groups are settled: one
// for every committed partition, unchanged over a few emit intervals.
func (e *exactBed) waitCheckpoints(t *testing.T, groups []string, committed map[string]map[int32]int64) map[string]map[int32]int64 {
	t.Helper()
	var last map[string]map[int32]int64
	stable := 0
	kafkatest.WaitFor(t, 120*time.Second, "MM2's checkpoints to settle", func() error {
		got := map[string]map[int32]int64{}
		for _, m := range e.bed.Target.ReadAll(t, e.src+".checkpoints.internal") {
			cp, err := messages.DecodeCheckpoint(m.Key, m.Value)
			if err != nil || !slices.Contains(groups, cp.Group) {
				continue
			}
			if got[cp.Group] == nil {
				got[cp.Group] = map[int32]int64{}
			}
			got[cp.Group][cp.Partition] = cp.DownstreamOffset
		}
		for _, g := range groups {
			for p := range committed[g] {
				if _, ok := got[g][p]; !ok {
					stable = 0
					return fmt.Errorf("no checkpoint of %s partition %d yet", g, p)
				}
			}
		}
		if last != nil && maps.EqualFunc(last, got, func(a, b map[int32]int64) bool { return maps.Equal(a, b) }) {
			stable++
		} else {
			stable = 0
		}
		last = got
		if stable < 3 {
			time.Sleep(time.Second)
			return fmt.Errorf("changed within the last %d reads", stable)
		}
		return nil
	})
	return last
}

// origins reads the target partitions and returns, per partition and
// target offset, the source offset of the record there.
func (e *exactBed) origins(t *testing.T, remote string, partitions int32) []map[int64]int64 {
	t.Helper()
	out := make([]map[int64]int64, partitions)
	for p := range out {
		out[p] = map[int64]int64{}
	}
	for _, m := range e.bed.Target.ReadAll(t, remote) {
		var p int32
		var off int64
		if _, err := fmt.Sscanf(string(m.Value), "%d/%d", &p, &off); err != nil || p != m.Partition {
			t.Fatalf("target record %d of partition %d: value %q", m.Offset, m.Partition, m.Value)
		}
		out[p][m.Offset] = off
	}
	return out
}

// failoverCost is what a consumer starting on the target at from sees,
// against a source group committed at committed: records it reads again
// (from the source records it had read) and records it never reads (target
// records before from that it had not read on the source).
func failoverCost(origins map[int64]int64, committed, from int64) (replayed, skipped int) {
	for off, src := range origins {
		switch {
		case off >= from && src < committed:
			replayed++
		case off < from && src >= committed:
			skipped++
		}
	}
	return replayed, skipped
}

// TestExactFailoverOnKafka: groups commit in bursts (now and then going
// back) while real MM2 mirrors a topic and writes offset syncs and
// checkpoints; then the producers and consumers stop (a planned failover)
// and `translate --apply --exact --execute` moves the groups on the target.
// Consumers starting there from the committed offsets read every record
// they had not read and none they had: 0 replayed, 0 skipped on every
// partition. MM2's checkpoints, the same failover without --exact, replay
// some; the test logs both.
func TestExactFailoverOnKafka(t *testing.T) {
	t.Parallel()
	const partitions, rounds = 4, 8
	groups := 12
	if n, err := strconv.Atoi(os.Getenv("FAILOVER_BENCH_GROUPS")); err == nil && n > 0 {
		groups = n // make bench-failover
	}
	e := newExactBed(t, partitions, nil)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 21))

	var names []string
	for i := range groups {
		names = append(names, e.group(i))
	}
	committed := map[string]map[int32]int64{}
	for r := range rounds {
		for p := range int32(partitions) {
			// Bursts: quiet partitions, small batches, big ones.
			e.produce(t, p, []int{0, 7, 60, 250, 600}[rng.IntN(5)]+boolInt(r == 0))
		}
		for _, g := range names {
			if rng.IntN(3) == 0 {
				continue // this group is idle this round
			}
			offsets := map[messages.TopicPartition]int64{}
			for p := range int32(partitions) {
				cur := committed[g][p]
				var next int64
				switch x := rng.IntN(20); {
				case x == 0 && cur > 0:
					next = rng.Int64N(cur) // a rewind
				case x < 8:
					next = e.ends[p] // caught up
				default:
					next = cur + rng.Int64N(e.ends[p]-cur+1)
				}
				next = max(next, 1)
				offsets[messages.TopicPartition{Topic: e.topic, Partition: p}] = next
				if committed[g] == nil {
					committed[g] = map[int32]int64{}
				}
				committed[g][p] = next
			}
			e.bed.Source.CommitOffsets(t, g, offsets)
		}
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
	}
	t.Logf("source ends %v", e.ends)
	e.waitReplicated(t)
	mm2 := e.waitCheckpoints(t, names, committed)

	args := []string{"translate", "--config", e.cfgPath, "--exact", "--format", "json"}
	for _, g := range names {
		args = append(args, "--group", g)
	}
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var rows []exactOffset
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("translate --exact output %q: %v", out, err)
	}
	exactOffsets := map[string]map[int32]int64{}
	for _, r := range rows {
		if r.Exact != "exact" {
			t.Errorf("%s partition %d: %s (%s), want exact", r.Group, r.Partition, r.Exact, r.ExactDetail)
		}
		if want := mm2[r.Group][r.Partition]; r.MM2DownstreamOffset != want {
			t.Errorf("%s partition %d: MM2 column %d, MM2's checkpoint %d", r.Group, r.Partition, r.MM2DownstreamOffset, want)
		}
		if exactOffsets[r.Group] == nil {
			exactOffsets[r.Group] = map[int32]int64{}
		}
		exactOffsets[r.Group][r.Partition] = r.DownstreamOffset
	}
	if len(rows) != groups*partitions {
		t.Errorf("%d rows, want %d", len(rows), groups*partitions)
	}

	// The CSV reset plan carries the same offsets.
	csvOut, err := runCLI(t, "translate", "--config", e.cfgPath, "--exact", "--format", "csv", "--group", names[0])
	if err != nil {
		t.Fatal(err)
	}
	lines, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil || len(lines) != partitions {
		t.Fatalf("csv %q: %v", csvOut, err)
	}
	for _, l := range lines {
		p, _ := strconv.Atoi(l[1])
		if l[0] != e.remote || l[2] != strconv.FormatInt(exactOffsets[names[0]][int32(p)], 10) {
			t.Errorf("csv line %v, want %s,%d,%d", l, e.remote, p, exactOffsets[names[0]][int32(p)])
		}
	}

	// The failover: commit the exact offsets into the idle target groups.
	if _, err := runCLI(t, append(append([]string{}, args[:len(args)]...), "--apply", "--execute")...); err != nil {
		t.Fatalf("translate --apply --exact --execute: %v", err)
	}

	origins := e.origins(t, e.remote, e.partitions)
	var exactReplayed, exactSkipped, mm2Replayed, mm2Skipped, mm2Zero, mm2Max int
	for _, g := range names {
		target := e.bed.Target.CommittedOffsets(t, g)
		for p := range int32(partitions) {
			c := committed[g][p]
			from, ok := target[messages.TopicPartition{Topic: e.remote, Partition: p}]
			if !ok {
				t.Errorf("%s partition %d: no offset on the target after --apply --exact --execute", g, p)
				continue
			}
			if from != exactOffsets[g][p] {
				t.Errorf("%s partition %d: target group at %d, translate --exact said %d", g, p, from, exactOffsets[g][p])
			}
			rep, skip := failoverCost(origins[p], c, from)
			exactReplayed += rep
			exactSkipped += skip
			if rep != 0 || skip != 0 {
				t.Errorf("%s partition %d (committed %d of %d): exact failover at %d replays %d, skips %d", g, p, c, e.ends[p], from, rep, skip)
			}
			mrep, mskip := failoverCost(origins[p], c, mm2[g][p])
			mm2Replayed += mrep
			mm2Skipped += mskip
			mm2Max = max(mm2Max, mrep)
			if mrep == 0 {
				mm2Zero++
			}
		}
	}
	n := groups * partitions
	t.Logf("planned failover of %d groups × %d partitions (source ends %v):", groups, partitions, e.ends)
	t.Logf("  --exact:     %d replayed, %d skipped; %d of %d partitions at 0 replayed", exactReplayed, exactSkipped, n, n)
	t.Logf("  MM2's rule:  %d replayed (mean %.1f, max %d per partition), %d skipped; %d of %d partitions at 0 replayed",
		mm2Replayed, float64(mm2Replayed)/float64(n), mm2Max, mm2Skipped, mm2Zero, n)
	if mm2Skipped != 0 {
		t.Errorf("MM2's checkpoints skip %d records", mm2Skipped)
	}
	if mm2Replayed == 0 {
		t.Errorf("MM2's rule replayed nothing: the run shows no difference (commits all at syncs?)")
	}

	// A budget too small for the longer searches: those keep MM2's.
	small := filepath.Join(t.TempDir(), "small.yaml")
	conf, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, append(conf, "checkpointd.exact.fetch.max.bytes: 1024\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	smallArgs := slices.Clone(args)
	smallArgs[2] = small
	out, err = runCLI(t, smallArgs...)
	if err != nil {
		t.Fatal(err)
	}
	var budgeted []exactOffset
	if err := json.Unmarshal([]byte(out), &budgeted); err != nil {
		t.Fatalf("translate --exact output %q: %v", out, err)
	}
	over := 0
	for _, r := range budgeted {
		switch {
		case r.Exact == "budget_exceeded" && r.DownstreamOffset == r.MM2DownstreamOffset:
			over++
		case r.Exact == "exact" && r.DownstreamOffset == exactOffsets[r.Group][r.Partition] && r.BytesRead <= 1024+256<<10:
		default:
			t.Errorf("with a 1 KiB budget: %+v", r)
		}
	}
	if over == 0 {
		t.Errorf("no search exceeded a 1 KiB budget")
	}

	// --explain --exact names the outcome per partition.
	out, err = runCLI(t, "translate", "--config", e.cfgPath, "--explain", "--exact", "--format", "json", "--group", names[0])
	if err != nil {
		t.Fatal(err)
	}
	var explained []exactExplanation
	if err := json.Unmarshal([]byte(out), &explained); err != nil {
		t.Fatalf("--explain --exact output %q: %v", out, err)
	}
	for _, x := range explained {
		if x.Exact != "exact" || x.ExactDownstream == nil || *x.ExactDownstream != exactOffsets[names[0]][x.Partition] {
			t.Errorf("--explain --exact row %+v, want exact at %d", x, exactOffsets[names[0]][x.Partition])
		}
	}
	if len(explained) != partitions {
		t.Errorf("--explain --exact: %d rows, want %d", len(explained), partitions)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
