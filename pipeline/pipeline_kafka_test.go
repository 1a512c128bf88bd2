package pipeline_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/adminpoll"
	runhistory "github.com/checkpointd/checkpointd/internal/testbed/history"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// managedConfig is the connector config a managed Kafka Connect service hands
// out (issue 5), verbatim; only its placeholders get filled in.
const managedConfig = `connector.class: "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
emit.checkpoints.interval.seconds: "CHECKPOINT_INTERVAL"
groups: ".*"
groups.exclude: "console-consumer-.*,connect-.*,__.*"
source.cluster.alias: "source"
source.cluster.bootstrap.servers: "SOURCE_CLUSTER_BOOTSTRAP_ADDRESS"
sync.group.offsets.enabled: "true"
sync.group.offsets.interval.seconds: "OFFSETS_SYNC_INTERVAL"
target.cluster.alias: "target"
target.cluster.bootstrap.servers: "TARGET_CLUSTER_BOOTSTRAP_ADDRESS"
tasks.max: "3"
`

// TestPipelineOnKafka runs checkpointd in-process against two real Kafka
// clusters, with a real MirrorMaker 2 writing the offset syncs. The subtests
// share the clusters and the MM2 process and run one after another; each has
// its own topics, groups and checkpointd group id.
func TestPipelineOnKafka(t *testing.T) {
	bed := kafkatest.Shared(t)
	start := time.Now()
	f := newFixture(t, bed, map[string]int32{
		"managed":            4,
		"failover":           2,
		"active":             2,
		"restart":            2,
		"restart-admin-poll": 2,
		"offsets-log":        2,
		"admin-poll":         2,
		"excluded":           1,
		"rewind":             2,
	})
	t.Logf("fixture ready in %s", time.Since(start).Round(time.Millisecond))

	// First: the managed config checkpoints every group (groups ".*"), so
	// it runs before the other scenarios create theirs.
	t.Run("managed-config", f.testManagedConfig)
	t.Run("failover", f.testFailover)
	t.Run("active-target-group", f.testActiveTargetGroup)
	t.Run("restart", f.testRestart("restart", ""))
	t.Run("restart,commit-source=admin-poll", f.testRestart("restart-admin-poll", "admin-poll"))
	t.Run("excluded-group", f.testExcludedGroup)
	t.Run("follow-source-rewinds", f.testFollowSourceRewinds)
	t.Run("commit-source=offsets-log", f.testCommitSource("offsets-log"))
	t.Run("commit-source=admin-poll", f.testCommitSource("admin-poll"))
}

// props is a checkpointd config for the shared clusters that checkpoints the
// given groups, with its own checkpointd group id. The checkpoints topic's
// replication factor is left at its default (3): the topic was pre-created.
func (f *fixture) props(t *testing.T, groups []string, commitSource string) [][2]string {
	p := [][2]string{
		{"source.cluster.alias", f.bed.Source.Alias},
		{"target.cluster.alias", f.bed.Target.Alias},
		{"source.cluster.bootstrap.servers", f.bed.Source.Bootstrap},
		{"target.cluster.bootstrap.servers", f.bed.Target.Bootstrap},
		{"groups", strings.Join(groups, ",")},
		{"emit.checkpoints.interval.seconds", "1"},
		{"sync.group.offsets.enabled", "true"},
		{"sync.group.offsets.interval.seconds", "1"},
		{"checkpointd.group.id", kafkatest.UniqueName(t, "checkpointd")},
	}
	if commitSource != "" {
		p = append(p, [2]string{"checkpointd.commit.source", commitSource})
	}
	if commitSource == "admin-poll" {
		p = append(p, [2]string{"checkpointd.admin.poll.interval.ms", "200"})
	}
	return p
}

// ---- 1. the managed-service config -------------------------------------------

func (f *fixture) testManagedConfig(t *testing.T) {
	text := strings.NewReplacer(
		"CHECKPOINT_INTERVAL", "1",
		"OFFSETS_SYNC_INTERVAL", "1",
		"SOURCE_CLUSTER_BOOTSTRAP_ADDRESS", f.bed.Source.Bootstrap,
		"TARGET_CLUSTER_BOOTSTRAP_ADDRESS", f.bed.Target.Bootstrap,
	).Replace(managedConfig)
	cfg := loadConfig(t, writeFile(t, "mirror-checkpoint-connector.yaml", text))
	in := f.start(t, "managed", cfg)
	if got := in.p.Topics(); got.Checkpoints != f.bed.CheckpointsTopic() || got.OffsetSyncs != f.bed.OffsetSyncsTopic() || got.OffsetSyncsOnTarget {
		t.Errorf("Topics() = %+v, want checkpoints %s and offset syncs %s on the source", got, f.bed.CheckpointsTopic(), f.bed.OffsetSyncsTopic())
	}
	t.Logf("checkpointd.commit.source=auto reads source commits from %q", in.p.Topics().CommitSource)
	f.commitAndVerify(t, "managed", kafkatest.UniqueName(t, "grp"), in)
	f.stop(t, in)
}

// commitAndVerify is the core scenario: records are mirrored; a group
// commits on the source at a sync point, between sync points, at the newest
// sync and at the end (per partition, cycling); checkpoints appear with MM2's
// bytes and the test's own translation; the target group follows. Then the
// group commits the end everywhere and everything follows again.
func (f *fixture) commitAndVerify(t *testing.T, key, group string, in *instance) {
	topic := f.topics[key]
	n := f.partitions[key]
	f.produce(t, key, 60, 10)
	ends, syncs := f.settle(t, key, in)

	kinds := []string{"at-sync", "between-syncs", "at-newest-sync", "end"}
	commits := make(map[int32]int64)
	for p := range n {
		kind := kinds[int(p)%len(kinds)]
		commits[p] = pickOffset(t, kind, syncs[p], ends[p])
		tr := translate(syncs[p], commits[p])
		t.Logf("partition %d: commit %d (%s), translation %d via %v (exact %v); syncs %v", p, commits[p], kind, tr.want, tr.via, tr.exact, upstreams(syncs[p]))
	}
	history := make(map[int32][]int64)
	f.commit(t, group, topic, commits, history)
	cps := f.waitCheckpoints(t, group, topic, commits)
	f.waitTargetFollows(t, group, cps)
	f.checkCheckpoints(t, group, topic, history, "")

	// The group consumes the rest.
	rest := make(map[int32]int64)
	for p, g := range commits {
		if g < ends[p] {
			rest[p] = ends[p]
		}
	}
	f.commit(t, group, topic, rest, history)
	cps = f.waitCheckpoints(t, group, topic, rest)
	got := f.waitTargetFollows(t, group, cps)
	f.checkCheckpoints(t, group, topic, history, "")
	// A fresh topic mirrored from its start has the same offsets on both sides.
	for p, end := range ends {
		if o := got[messages.TopicPartition{Topic: f.remote(topic), Partition: p}]; o.offset != end {
			t.Errorf("partition %d: target group at %d after the source group consumed everything; want the end %d", p, o.offset, end)
		}
	}
}

// pickOffset chooses a commit offset of the given kind from the syncs MM2's
// store keeps for a partition. When MM2 left too few syncs for the kind it
// falls back to the end, and says so.
func pickOffset(t *testing.T, kind string, syncs []messages.OffsetSync, end int64) int64 {
	t.Helper()
	var st mm2Store
	for _, s := range syncs {
		st.apply(s.UpstreamOffset, s.DownstreamOffset)
	}
	kept := st.stored() // newest first
	slices.Reverse(kept)
	newest := syncs[len(syncs)-1].UpstreamOffset
	switch kind {
	case "at-sync": // a kept sync point before the newest
		if older := kept[:len(kept)-1]; len(older) > 0 {
			return older[len(older)/2]
		}
	case "between-syncs": // strictly between two kept sync points
		var gaps [][2]int64
		for i := 1; i < len(kept); i++ {
			if kept[i]-kept[i-1] >= 2 {
				gaps = append(gaps, [2]int64{kept[i-1], kept[i]})
			}
		}
		if len(gaps) > 0 {
			g := gaps[len(gaps)/2]
			return g[0] + (g[1]-g[0])/2
		}
	case "at-newest-sync":
		return newest
	case "end":
		return end
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	t.Logf("MM2 kept too few offset syncs for a commit %s (kept %v): committing the end instead", kind, kept)
	return end
}

// upstreams returns the distinct upstream offsets of syncs, ascending.
func upstreams(syncs []messages.OffsetSync) []int64 {
	var us []int64
	for _, s := range syncs {
		us = append(us, s.UpstreamOffset)
	}
	slices.Sort(us)
	return slices.Compact(us)
}

// ---- 2. failover --------------------------------------------------------------------

// testFailover: a real consumer group reads 300 of 1000 mirrored records on
// the source and commits; once checkpointd synced the group on the target, a
// consumer with the same group id resumes there from the committed offsets
// (OffsetNewest where none: a missing commit skips records and fails). Both
// together must have seen every record.
func (f *fixture) testFailover(t *testing.T) {
	const key, perPartition, quota, metadata = "failover", 500, 150, "failover-meta"
	topic := f.topics[key]
	group := kafkatest.UniqueName(t, "grp")
	in := f.start(t, "failover", loadConfig(t, writeConfig(t, "checkpointd.yaml", f.props(t, []string{group}, ""))))

	f.produce(t, key, perPartition, 25)
	_, syncs := f.settle(t, key, in)
	for p, ss := range syncs {
		t.Logf("partition %d: offset syncs at upstream %v", p, upstreams(ss))
	}
	all := f.bed.Source.ReadAll(t, topic)

	// The source consumer: quota records per partition, marked, then one
	// commit of every partition. (Commits in between could be checkpointed
	// with the same downstream offset, and MM2 then keeps the earlier one.)
	var mu sync.Mutex
	seenSource := make(map[string]bool)
	counts := make(map[int32]int)
	full := 0
	committed := make(chan struct{})
	src := join(t, f.bed.Source, group, topic, sarama.OffsetOldest, func(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
		for {
			select {
			case msg, ok := <-c.Messages():
				if !ok {
					return nil
				}
				mu.Lock()
				if counts[msg.Partition] < quota {
					seenSource[string(msg.Value)] = true
					counts[msg.Partition]++
					s.MarkMessage(msg, metadata)
					if counts[msg.Partition] == quota {
						if full++; full == int(f.partitions[key]) {
							s.Commit()
							close(committed)
						}
					}
				}
				mu.Unlock()
			case <-s.Context().Done():
				return nil
			}
		}
	})
	select {
	case <-committed:
	case <-time.After(waitTimeout):
		mu.Lock()
		got := maps.Clone(counts)
		mu.Unlock()
		t.Fatalf("source consumer did not read %d records per partition within %s (counts %v)", quota, waitTimeout, got)
	}
	src.stop(t)
	offsets := f.bed.Source.CommittedOffsets(t, group)
	commits := make(map[int32]int64)
	history := make(map[int32][]int64)
	for tp, o := range offsets {
		commits[tp.Partition] = o
		history[tp.Partition] = []int64{o}
	}
	if len(commits) != int(f.partitions[key]) {
		t.Fatalf("source group committed %v, want every partition", offsets)
	}
	t.Logf("source group %s committed %v", group, commits)

	cps := f.waitCheckpoints(t, group, topic, commits)
	target := f.waitTargetFollows(t, group, cps)
	f.checkCheckpoints(t, group, topic, history, metadata)
	for tp, o := range target {
		if o.metadata != metadata {
			t.Errorf("target commit of %s carries metadata %q, want the source commit's %q", tp, o.metadata, metadata)
		}
	}
	f.stop(t, in)
	stopped := time.Now()

	// Fail over: the same group id on the target.
	remote := f.remote(topic)
	ends := f.bed.Target.EndOffsets(t, remote)
	seenTarget := make(map[string]bool)
	last := make(map[int32]int64)
	done := make(chan struct{})
	var closeOnce sync.Once
	dst := join(t, f.bed.Target, group, remote, sarama.OffsetNewest, func(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
		if cp := cps[c.Partition()]; c.InitialOffset() != cp.DownstreamOffset {
			t.Errorf("target consumer starts partition %d at %d, not at the synced checkpoint's %d", c.Partition(), c.InitialOffset(), cp.DownstreamOffset)
		}
		for {
			select {
			case msg, ok := <-c.Messages():
				if !ok {
					return nil
				}
				mu.Lock()
				seenTarget[string(msg.Value)] = true
				last[msg.Partition] = msg.Offset
				complete := true
				for p, end := range ends {
					if last[p] < end-1 {
						complete = false
					}
				}
				mu.Unlock()
				if complete {
					closeOnce.Do(func() { close(done) })
				}
			case <-s.Context().Done():
				return nil
			}
		}
	})
	select {
	case <-done:
	case <-time.After(waitTimeout):
		mu.Lock()
		t.Errorf("target consumer did not reach the end offsets %v within %s: last offsets %v (a partition that never delivers started at its end: a missing or too high commit)", ends, waitTimeout, last)
		mu.Unlock()
	}
	dst.stop(t)

	mu.Lock()
	defer mu.Unlock()
	missed, replayed := 0, 0
	for _, rec := range all {
		v := string(rec.Value)
		switch {
		case seenSource[v] && seenTarget[v]:
			replayed++
		case !seenSource[v] && !seenTarget[v]:
			missed++
			if missed <= 5 {
				t.Errorf("record %s-%d@%d (%q) was seen by neither consumer", rec.Topic, rec.Partition, rec.Offset, v)
			}
		}
	}
	if missed > 0 {
		t.Errorf("%d of %d records skipped at failover", missed, len(all))
	}
	t.Logf("failover: %d records, %d read on the source, %d on the target, %d replayed (read on both)", len(all), len(seenSource), len(seenTarget), replayed)

	// The whole history, judged offline: every commit, sync, checkpoint
	// and target write while checkpointd ran, against where MM2 actually
	// put each record.
	h := runhistory.Read(t, runhistory.ReadOptions{
		Source: f.bed.Source, Target: f.bed.Target,
		Groups: func(g string) bool { return g == group }, Topics: func(s string) bool { return s == topic },
		Remote: f.remote, SyncsTopic: f.bed.OffsetSyncsTopic(), CheckpointsTopic: f.bed.CheckpointsTopic(),
		WritesUntil: stopped,
	})
	h.Replicated = runhistory.ReplicatedRecords(all, f.bed.Target.ReadAll(t, remote), f.remote)
	h.Bound, h.SyncsTarget = 10*time.Second, true
	// checkpointd was stopped only once the target had followed: every
	// commit is judged, as if the run had gone on for the bound.
	h.End = stopped.Add(h.Bound)
	if st := runhistory.Verify(t, h); st.Judged == 0 {
		t.Error("history: no commit judged")
	}
	for p, cp := range cps {
		var st mm2Store
		for _, s := range syncs[p] {
			st.apply(s.UpstreamOffset, s.DownstreamOffset)
		}
		t.Logf("partition %d: commit %d -> checkpoint %d; MM2's store keeps syncs at upstream %v", p, cp.UpstreamOffset, cp.DownstreamOffset, st.stored())
	}
}

// ---- 3. active target group; target ahead -------------------------------------------

// testActiveTargetGroup: while a member of group X is connected on the target,
// checkpoints for X are emitted but X is not written; after it leaves, X
// catches up. A target group Y already ahead of the translation keeps its
// offset (its other, new partition is synced, which shows the decision ran).
func (f *fixture) testActiveTargetGroup(t *testing.T) {
	const key = "active"
	topic, remote := f.topics[key], f.remote(f.topics[key])
	groupX := kafkatest.UniqueName(t, "grpx")
	groupY := kafkatest.UniqueName(t, "grpy")
	groupZ := kafkatest.UniqueName(t, "grpz")
	in := f.start(t, "active", loadConfig(t, writeConfig(t, "checkpointd.yaml", f.props(t, []string{groupX, groupY, groupZ}, ""))))

	f.produce(t, key, 100, 10)
	ends, syncs := f.settle(t, key, in)
	pick := func(p int32, kind string) int64 { return pickOffset(t, kind, syncs[p], ends[p]) }

	// X has a live member on the target that never commits.
	x := join(t, f.bed.Target, groupX, remote, sarama.OffsetOldest, func(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
		for {
			select {
			case _, ok := <-c.Messages():
				if !ok {
					return nil
				}
			case <-s.Context().Done():
				return nil
			}
		}
	})
	x.waitJoined(t, "target member of "+groupX)
	f.requireActive(t, groupX)

	historyX := make(map[int32][]int64)
	commitsX := map[int32]int64{0: pick(0, "between-syncs"), 1: pick(1, "at-sync")}
	f.commit(t, groupX, topic, commitsX, historyX)
	cpsX := f.waitCheckpoints(t, groupX, topic, commitsX)
	f.checkCheckpoints(t, groupX, topic, historyX, "")

	// Z is idle on the target: once Z's checkpoint, which is after X's in the
	// topic, has been committed, the syncer has handled X's checkpoint too.
	historyZ := make(map[int32][]int64)
	commitsZ := map[int32]int64{0: pick(0, "at-sync")}
	f.commit(t, groupZ, topic, commitsZ, historyZ)
	f.waitTargetFollows(t, groupZ, f.waitCheckpoints(t, groupZ, topic, commitsZ))
	// And a few retry intervals more (sync.group.offsets.interval.seconds=1).
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(pollEvery) {
		if got := f.targetOffsets(t, groupX); len(got) > 0 {
			t.Fatalf("group %s has a member on the target, yet offsets were committed into it: %v", groupX, got)
		}
	}
	f.requireActive(t, groupX) // still active all along

	x.stop(t)
	f.waitTargetFollows(t, groupX, cpsX)

	// Y: ahead on the target on partition 0 (past the end: Kafka does not
	// check), nothing on partition 1.
	ahead := ends[0] + 50
	f.bed.Target.CommitOffsets(t, groupY, map[messages.TopicPartition]int64{{Topic: remote, Partition: 0}: ahead})
	historyY := make(map[int32][]int64)
	commitsY := map[int32]int64{0: pick(0, "between-syncs"), 1: pick(1, "between-syncs")}
	f.commit(t, groupY, topic, commitsY, historyY)
	cpsY := f.waitCheckpoints(t, groupY, topic, commitsY)
	f.checkCheckpoints(t, groupY, topic, historyY, "")
	if d := cpsY[0].DownstreamOffset; d >= ahead {
		t.Fatalf("test premise: checkpoint downstream %d is not below the target's %d", d, ahead)
	}
	f.waitTargetFollows(t, groupY, map[int32]checkpointRecord{1: cpsY[1]})
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(pollEvery) {
		got := f.targetOffsets(t, groupY)
		if o := got[messages.TopicPartition{Topic: remote, Partition: 0}]; o.offset != ahead {
			t.Fatalf("group %s: target offset of partition 0 went from %d to %d (checkpoint %v): lowered", groupY, ahead, o.offset, cpsY[0].Checkpoint)
		}
	}
	f.stop(t, in)
}

// testExcludedGroup: a group excluded by groups.exclude gets neither
// checkpoints nor target commits, even when the checkpoints topic holds a
// checkpoint for it written by someone else (Java MM2 before the switch to
// checkpointd, or a deployment with other group filters). MM2 syncs only the
// checkpoints of its own groups (its CheckpointStore keeps only those).
func (f *fixture) testExcludedGroup(t *testing.T) {
	const key = "excluded"
	topic, remote := f.topics[key], f.remote(f.topics[key])
	group := kafkatest.UniqueName(t, "grp")
	excluded := kafkatest.UniqueName(t, "grpe")
	props := append(f.props(t, []string{group, excluded}, ""), [2]string{"groups.exclude", excluded})
	in := f.start(t, "excluded", loadConfig(t, writeConfig(t, "checkpointd.yaml", props)))
	f.produce(t, key, 20, 10)
	f.settle(t, key, in)

	// The excluded group commits on the source, and an MM2-format checkpoint
	// for it is in the topic.
	f.commit(t, excluded, topic, map[int32]int64{0: 10}, make(map[int32][]int64))
	producer, err := sarama.NewSyncProducer([]string{f.bed.Target.Bootstrap}, f.bed.Target.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if _, _, err := producer.SendMessage(&sarama.ProducerMessage{
		Topic: f.bed.CheckpointsTopic(), Partition: 0,
		Key:   sarama.ByteEncoder(mm2Key(excluded, remote, 0)),
		Value: sarama.ByteEncoder(mm2Value(10, 10, "")),
	}); err != nil {
		t.Fatalf("write a checkpoint for %s: %v", excluded, err)
	}

	// A group that is checkpointed, after it: once its target commit is
	// there, the commit stage has read past the excluded group's checkpoint.
	history := make(map[int32][]int64)
	commits := map[int32]int64{0: 15}
	f.commit(t, group, topic, commits, history)
	f.waitTargetFollows(t, group, f.waitCheckpoints(t, group, topic, commits))
	f.checkCheckpoints(t, group, topic, history, "")

	if got := f.targetOffsets(t, excluded); len(got) > 0 {
		t.Errorf("group %s is excluded (groups.exclude), yet checkpointd committed its offsets on the target: %v", excluded, got)
	}
	if cps := f.checkpointsOf(t, excluded); len(cps) != 1 {
		t.Errorf("group %s is excluded, yet it has %d checkpoints (want only the one the test wrote): %v", excluded, len(cps), cps)
	}
	f.stop(t, in)
}

// requireActive fails unless group has members on the target.
func (f *fixture) requireActive(t *testing.T, group string) {
	t.Helper()
	ds, err := f.targetAdmin.DescribeConsumerGroups([]string{group})
	if err != nil || len(ds) != 1 {
		t.Fatalf("describe group %s on the target: %v", group, err)
	}
	if len(ds[0].Members) == 0 {
		t.Fatalf("test premise: group %s has no members on the target (state %s)", group, ds[0].State)
	}
}

// ---- 4. restart -----------------------------------------------------------------------

// testRestart: a group commits in steps (between syncs, then the end) while
// checkpointd runs; checkpointd is stopped right after a commit, the group
// commits more, a new instance with the same config starts and a last step
// follows. Downstream offsets never decrease, the last checkpoint is the
// final commit's translation and the target group follows. A third instance
// started with nothing new to checkpoint emits nothing.
func (f *fixture) testRestart(key, commitSource string) func(*testing.T) {
	return func(t *testing.T) { f.restart(t, key, commitSource) }
}

func (f *fixture) restart(t *testing.T, key, commitSource string) {
	topic := f.topics[key]
	group := kafkatest.UniqueName(t, "grp")
	cfgPath := writeConfig(t, "checkpointd.yaml", f.props(t, []string{group}, commitSource))
	history := make(map[int32][]int64)
	prevEnds := make(map[int32]int64)

	// step produces, waits for the syncs, commits a mid offset and the end.
	step := func(n int, in *instance) map[int32]int64 {
		f.produce(t, key, 30, 10)
		ends, syncs := f.settle(t, key, in)
		mid := make(map[int32]int64)
		for p, end := range ends {
			mid[p] = midOffset(syncs[p], prevEnds[p], end)
		}
		f.commit(t, group, topic, mid, history)
		f.commit(t, group, topic, ends, history)
		t.Logf("step %d: committed %v then %v", n, mid, ends)
		prevEnds = ends
		return ends
	}

	a := f.start(t, "restart-a", loadConfig(t, cfgPath))
	f.waitCheckpoints(t, group, topic, step(1, a))
	step(2, a)
	f.stop(t, a) // right after the commits: what was in flight is drained or redone
	step(3, nil)
	b := f.start(t, "restart-b", loadConfig(t, cfgPath))
	f.waitCheckpoints(t, group, topic, prevEnds)
	final := step(4, b)
	cps := f.waitCheckpoints(t, group, topic, final)
	f.waitTargetFollows(t, group, cps)
	f.checkCheckpoints(t, group, topic, history, "")

	// Every checkpoint of the group, in order: downstream never decreases.
	last := make(map[messages.TopicPartition]checkpointRecord)
	var seq []string
	for _, cp := range f.checkpointsOf(t, group) {
		if prev, ok := last[cp.TopicPartition]; ok && cp.DownstreamOffset < prev.DownstreamOffset {
			t.Errorf("checkpoint at offset %d (%v) goes back from %v at offset %d", cp.rec.Offset, cp.Checkpoint, prev.Checkpoint, prev.rec.Offset)
		}
		last[cp.TopicPartition] = cp
		seq = append(seq, fmt.Sprintf("p%d:%d->%d", cp.Partition, cp.UpstreamOffset, cp.DownstreamOffset))
	}
	t.Logf("checkpoints of %s in order: %s", group, strings.Join(seq, " "))
	f.stop(t, b)

	// Nothing changed since b's last checkpoints: a third instance restores
	// them from the topic and, having decided every partition, emits nothing.
	c := f.start(t, "restart-c", loadConfig(t, cfgPath))
	f.waitFor(t, waitTimeout, "restart-c to decide group "+group, func() error {
		for p := range f.partitions[key] {
			if _, ok := c.obs.outcome(group, p); !ok {
				return fmt.Errorf("partition %d not decided yet", p)
			}
		}
		return nil
	})
	if again := c.obs.emittedFor(group); len(again) > 0 {
		t.Errorf("restart-c emitted %v although nothing changed since the last checkpoints %v: the previous checkpoints were not restored", again, last)
	}
	f.stop(t, c)
}

// midOffset is an offset in (from, end) between sync points: just past the
// first sync after from, where that is not a sync point itself, so it moves
// the translation forward; else from+1.
func midOffset(syncs []messages.OffsetSync, from, end int64) int64 {
	us := upstreams(syncs)
	for _, u := range us {
		if u > from && u+1 < end-1 && !slices.Contains(us, u+1) {
			return u + 1
		}
	}
	return from + 1
}

// ---- 5. both commit sources ---------------------------------------------------------------

func (f *fixture) testCommitSource(mode string) func(*testing.T) {
	return func(t *testing.T) {
		group := kafkatest.UniqueName(t, "grp")
		in := f.start(t, mode, loadConfig(t, writeConfig(t, "checkpointd.yaml", f.props(t, []string{group}, mode))))
		want := map[string]string{"offsets-log": "__consumer_offsets", "admin-poll": adminpoll.Topic}[mode]
		if got := in.p.Topics().CommitSource; got != want {
			t.Errorf("Topics().CommitSource = %q with checkpointd.commit.source=%s, want %q", got, mode, want)
		}
		f.commitAndVerify(t, mode, group, in)
		f.stop(t, in)
	}
}

// ---- following a source rewind --------------------------------------------------

// testFollowSourceRewinds: two source groups commit 203 on every partition
// and their target groups follow. On the target, a consumer of the second
// group commits on its own. checkpointd restarts. Both source groups are
// deleted and re-created at 50. The first target group goes back to the new
// translation (a failover skips nothing), the second, moved by its
// consumer, is left where it is.
func (f *fixture) testFollowSourceRewinds(t *testing.T) {
	const key, high, low = "rewind", 203, 50
	topic, remote := f.topics[key], f.remote(f.topics[key])
	followed, moved := kafkatest.UniqueName(t, "grp"), kafkatest.UniqueName(t, "grp-moved")
	cfgPath := writeConfig(t, "checkpointd.yaml", f.props(t, []string{followed, moved}, ""))
	in := f.start(t, "rewind-1", loadConfig(t, cfgPath))
	f.produce(t, key, 300, 25)
	f.settle(t, key, in)
	checkRollsSegments(t, f.bed.Target, f.bed.Source.Alias+".checkpointd-commits.internal")

	at := func(o int64) map[int32]int64 {
		m := make(map[int32]int64)
		for p := range f.partitions[key] {
			m[p] = o
		}
		return m
	}
	history := map[string]map[int32][]int64{followed: {}, moved: {}}
	synced := make(map[string]map[int32]checkpointRecord)
	for _, g := range []string{followed, moved} {
		f.commit(t, g, topic, at(high), history[g])
		synced[g] = f.waitCheckpoints(t, g, topic, at(high))
		f.waitTargetFollows(t, g, synced[g])
	}
	// A consumer of the second group read on the target and committed.
	consumerAt := make(map[messages.TopicPartition]int64)
	for p, cp := range synced[moved] {
		consumerAt[messages.TopicPartition{Topic: remote, Partition: p}] = cp.DownstreamOffset + 7
	}
	f.bed.Target.CommitOffsets(t, moved, consumerAt)

	// Restart: what checkpointd committed comes back from the commit log.
	f.stop(t, in)
	in = f.start(t, "rewind-2", loadConfig(t, cfgPath))

	admin := f.bed.Source.Admin(t)
	for _, g := range []string{followed, moved} {
		if err := admin.DeleteConsumerGroup(g); err != nil {
			t.Fatalf("delete source group %s: %v", g, err)
		}
		f.commit(t, g, topic, at(low), history[g])
	}
	cps := f.waitCheckpoints(t, followed, topic, at(low))
	target := f.waitTargetFollows(t, followed, cps)
	for p, cp := range cps {
		tp := messages.TopicPartition{Topic: remote, Partition: p}
		// Source and remote offsets are the same here (a plain producer on
		// a fresh topic), so a failover consumer starting at the target
		// offset skips nothing when that offset is at most the source's.
		if o := target[tp].offset; o > low {
			t.Errorf("%s: target group %s at %d after the source went back to %d: a failover skips %d records", tp, followed, o, low, o-low)
		}
		if r := in.obs.targetOutcome(followed, p); r != targetgroup.Rewound {
			t.Errorf("%s: commit stage outcome %q for %s, want %q", tp, r, followed, targetgroup.Rewound)
		}
		t.Logf("%s: %s went from %d back to %d (checkpoint %v)", tp, followed, synced[followed][p].DownstreamOffset, target[tp].offset, cp.Checkpoint)
	}
	f.waitCheckpoints(t, moved, topic, at(low))
	f.waitFor(t, waitTimeout, "the commit stage to decide group "+moved, func() error {
		for p := range f.partitions[key] {
			if r := in.obs.targetOutcome(moved, p); r != targetgroup.TargetAheadMovedByConsumer {
				return fmt.Errorf("partition %d: outcome %q, want %q", p, r, targetgroup.TargetAheadMovedByConsumer)
			}
		}
		return nil
	})
	got := f.targetOffsets(t, moved)
	for tp, want := range consumerAt {
		if got[tp].offset != want {
			t.Errorf("%s: target group %s at %d, want its consumer's %d left alone", tp, moved, got[tp].offset, want)
		}
	}
	f.stop(t, in)
	f.failOver(t, followed, topic, target, low)
}

// failOver runs a consumer of group on the target, from its committed
// offsets, and checks it reads every record the source group had not
// processed: those at and after from on the source, by value.
func (f *fixture) failOver(t *testing.T, group, topic string, committed map[messages.TopicPartition]groupOffset, from int64) {
	t.Helper()
	remote := f.remote(topic)
	const ahead = 5 // records past from that must arrive
	var mu sync.Mutex
	seen := make(map[string]bool)
	reached := make(map[int32]bool)
	done := make(chan struct{})
	var once sync.Once
	m := join(t, f.bed.Target, group, remote, sarama.OffsetNewest, func(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
		tp := messages.TopicPartition{Topic: remote, Partition: c.Partition()}
		if c.InitialOffset() != committed[tp].offset {
			t.Errorf("%s: failover consumer starts at %d, not at the committed %d", tp, c.InitialOffset(), committed[tp].offset)
		}
		for {
			select {
			case msg, ok := <-c.Messages():
				if !ok {
					return nil
				}
				mu.Lock()
				seen[string(msg.Value)] = true
				if msg.Offset >= from+ahead {
					reached[msg.Partition] = true
				}
				if len(reached) == len(committed) {
					once.Do(func() { close(done) })
				}
				mu.Unlock()
			case <-s.Context().Done():
				return nil
			}
		}
	})
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("failover consumer of %s did not read past offset %d on every partition within %s", group, from+ahead, waitTimeout)
	}
	m.stop(t)
	mu.Lock()
	defer mu.Unlock()
	missed := 0
	for _, r := range f.bed.Source.ReadAll(t, topic) {
		if r.Offset >= from && r.Offset <= from+ahead && !seen[string(r.Value)] {
			missed++
			t.Errorf("failover consumer of %s skipped source record %s-%d@%d", group, topic, r.Partition, r.Offset)
		}
	}
	t.Logf("failover consumer of %s read %d records, none of the source's from offset %d on skipped (%d missed)", group, len(seen), from, missed)
}

// checkRollsSegments checks that a compacted topic checkpointd created
// closes its segments within an hour or 128 MiB: Kafka compacts closed
// segments only, and a new shard owner reads the topic back whole.
func checkRollsSegments(t *testing.T, c *kafkatest.Cluster, topic string) {
	t.Helper()
	entries, err := c.Admin(t).DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("describe the config of %s: %v", topic, err)
	}
	got := make(map[string]string)
	for _, e := range entries {
		got[e.Name] = e.Value
	}
	for k, want := range map[string]string{"cleanup.policy": "compact", "segment.ms": "3600000", "segment.bytes": "134217728"} {
		if got[k] != want {
			t.Errorf("%s: %s=%q, want %q", topic, k, got[k], want)
		}
	}
}
