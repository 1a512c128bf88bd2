package pipeline_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/metrics"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
	"github.com/checkpointd/checkpointd/pipeline"
)

// Generous bounds for a shared two-core machine; they fail a test that hangs,
// they measure nothing.
const (
	waitTimeout  = 60 * time.Second
	pollEvery    = 200 * time.Millisecond
	stopTimeout  = 20 * time.Second // graceful shutdown bound (issue 5)
	startTimeout = 60 * time.Second
)

// fixture is what the subtests of TestPipelineOnKafka share: the two
// clusters, one MirrorMaker 2 (its source connector only) mirroring every
// topic the scenarios use, and tails of the offset-syncs topic (source) and
// the checkpoints topic (target).
type fixture struct {
	bed          *kafkatest.Bed
	mm2          *kafkatest.MM2
	topics       map[string]string // scenario key -> source topic
	partitions   map[string]int32  // scenario key -> partition count
	syncs        *tail             // mm2-offset-syncs.target.internal on the source
	checkpoints  *tail             // source.checkpoints.internal on the target
	targetAdmin  sarama.ClusterAdmin
	sourceClient sarama.Client
	targetClient sarama.Client

	mu      sync.Mutex
	running map[*instance]struct{} // checkpointd instances started and not stopped
}

// newFixture pre-creates the checkpoints topic the way an operator would for
// a one-broker cluster (1 partition, compacted, replication factor 1: the
// default of 3 cannot be met), creates the scenarios' topics and starts MM2
// with offset.lag.max 10 and no checkpoint connector work: emit.checkpoints is
// off and its group filter matches no group, so every checkpoint in
// source.checkpoints.internal is checkpointd's.
func newFixture(t *testing.T, bed *kafkatest.Bed, topics map[string]int32) *fixture {
	t.Helper()
	f := &fixture{
		bed:          bed,
		topics:       make(map[string]string),
		partitions:   topics,
		targetAdmin:  bed.Target.Admin(t),
		sourceClient: bed.Source.Client(t),
		targetClient: bed.Target.Client(t),
		running:      make(map[*instance]struct{}),
	}
	f.precreateCheckpointsTopic(t)
	var names []string
	for _, key := range slices.Sorted(maps.Keys(topics)) {
		name := kafkatest.UniqueName(t, "cpd-"+key)
		bed.Source.CreateTopic(t, name, topics[key], nil)
		f.topics[key] = name
		names = append(names, name) // only [A-Za-z0-9-]: each is a literal regex
	}
	lagMax := int64(10)
	f.mm2 = bed.StartMM2(t, kafkatest.MM2Options{
		Topics:       strings.Join(names, ","),
		Groups:       "no-group-is-named-like-this-checkpointd-test",
		OffsetLagMax: &lagMax,
	})
	t.Logf("mm2 ready in %s", f.mm2.ReadyIn.Round(time.Millisecond))
	f.syncs = startTail(t, bed.Source, bed.OffsetSyncsTopic())
	f.checkpoints = startTail(t, bed.Target, bed.CheckpointsTopic())
	return f
}

func (f *fixture) precreateCheckpointsTopic(t *testing.T) {
	t.Helper()
	name := f.bed.CheckpointsTopic()
	compact := "compact"
	err := f.targetAdmin.CreateTopic(name, &sarama.TopicDetail{
		NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"cleanup.policy": &compact},
	}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("pre-create %s on the target: %v", name, err)
	}
	// Already there (an earlier -count run in this binary): it must be ours.
	// Just created, the broker may describe it without partitions for a
	// moment.
	kafkatest.WaitFor(t, 10*time.Second, name+" with its one partition", func() error {
		md, err := f.targetAdmin.DescribeTopics([]string{name})
		if err != nil || len(md) != 1 {
			return fmt.Errorf("describe %s: %v", name, err)
		}
		if n := len(md[0].Partitions); n != 1 {
			return fmt.Errorf("%s has %d partitions, want 1", name, n)
		}
		return nil
	})
}

// remote names topic's replica on the target.
func (f *fixture) remote(topic string) string { return f.bed.RemoteTopic(topic) }

// waitFor polls cond until it returns nil and fails the test after timeout
// with cond's last error. It also fails at once if a checkpointd instance
// stopped on its own.
// explain, if given, adds context to the failure.
func (f *fixture) waitFor(t *testing.T, timeout time.Duration, what string, cond func() error, explain ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		f.checkRunning(t)
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			var more string
			for _, e := range explain {
				more += e()
			}
			t.Fatalf("waiting for %s: gave up after %s: %v%s", what, timeout, err, more)
		}
		time.Sleep(pollEvery)
	}
}

func (f *fixture) checkRunning(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for in := range f.running {
		select {
		case err := <-in.done:
			delete(f.running, in)
			in.stopped = true
			t.Fatalf("checkpointd %s stopped on its own: Run returned %v", in.name, err)
		default:
		}
	}
}

// ---- checkpointd in-process ----------------------------------------------

// instance is one checkpointd running in this process.
type instance struct {
	name    string
	p       *pipeline.Pipeline
	obs     *decisions
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// writeConfig writes a YAML config file of string properties, in order.
func writeConfig(t *testing.T, name string, props [][2]string) string {
	t.Helper()
	var b strings.Builder
	for _, kv := range props {
		fmt.Fprintf(&b, "%s: %q\n", kv[0], kv[1])
	}
	return writeFile(t, name, b.String())
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadConfig is config.Load with no overrides; problems fail the test.
func loadConfig(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, rep, err := config.Load(path, nil, nil)
	if rep != nil {
		for _, w := range rep.Warnings {
			t.Logf("config warning: %s", w)
		}
	}
	if err != nil {
		t.Fatalf("config.Load(%s): %v", filepath.Base(path), err)
	}
	return cfg
}

// start runs checkpointd from cfg: pipeline.New, then Run in a goroutine.
// The instance is stopped (and its shutdown checked) when the test ends, if
// the test did not stop it.
func (f *fixture) start(t *testing.T, name string, cfg *config.Config) *instance {
	t.Helper()
	logger := testLogger(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	obs := &decisions{log: logger, last: make(map[groupPartition]string)}
	p, err := pipeline.New(ctx, cfg, pipeline.WithLogger(logger), pipeline.WithObserver(obs))
	if err != nil {
		t.Fatalf("pipeline.New (%s): %v", name, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	in := &instance{name: name, p: p, obs: obs, cancel: stop, done: make(chan error, 1)}
	go func() { in.done <- p.Run(runCtx) }()
	f.mu.Lock()
	f.running[in] = struct{}{}
	f.mu.Unlock()
	t.Cleanup(func() { f.stop(t, in) })
	return in
}

// stop cancels the instance's context and checks the graceful shutdown: Run
// returns nil within stopTimeout.
func (f *fixture) stop(t *testing.T, in *instance) {
	t.Helper()
	f.mu.Lock()
	if in.stopped {
		f.mu.Unlock()
		return
	}
	in.stopped = true
	delete(f.running, in)
	f.mu.Unlock()
	in.cancel()
	began := time.Now()
	select {
	case err := <-in.done:
		t.Logf("checkpointd %s stopped in %s", in.name, time.Since(began).Round(time.Millisecond))
		if err != nil {
			t.Errorf("checkpointd %s: Run returned %v after its context was cancelled; want nil (graceful shutdown)", in.name, err)
		}
	case <-time.After(stopTimeout):
		t.Errorf("checkpointd %s: Run did not return within %s of its context being cancelled", in.name, stopTimeout)
	}
}

// decisions records and logs checkpointd's decisions (pipeline.WithObserver):
// what was emitted and the last outcome per (group, partition).
type decisions struct {
	handlers.NopObserver
	log *slog.Logger

	mu      sync.Mutex
	emitted []messages.Checkpoint
	last    map[groupPartition]string             // "emitted" or the skip reason
	targets map[groupPartition]targetgroup.Reason // the commit stage's last outcome
}

func (d *decisions) TargetResult(_ context.Context, group string, tp messages.TopicPartition, r targetgroup.Reason, _, _ time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.targets == nil {
		d.targets = make(map[groupPartition]targetgroup.Reason)
	}
	d.targets[groupPartition{group, tp.Partition}] = r
}

// targetOutcome is the commit stage's last outcome for (group, partition).
func (d *decisions) targetOutcome(group string, partition int32) targetgroup.Reason {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.targets[groupPartition{group, partition}]
}

type groupPartition struct {
	group     string
	partition int32
}

func (d *decisions) CheckpointEmitted(_ context.Context, cp messages.Checkpoint, committedAt time.Time) {
	d.log.Info("observer: checkpoint emitted", "checkpoint", cp.String())
	d.mu.Lock()
	defer d.mu.Unlock()
	d.emitted = append(d.emitted, cp)
	d.last[groupPartition{cp.Group, cp.Partition}] = "emitted"
}

func (d *decisions) CheckpointSkipped(_ context.Context, group string, tp messages.TopicPartition, _ int64, reason messages.SkipReason) {
	d.log.Info("observer: checkpoint skipped", "group", group, "partition", tp.String(), "reason", reason)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last[groupPartition{group, tp.Partition}] = reason.String()
}

func (d *decisions) RecordMalformed(topic string, partition int32, offset int64, err error) {
	d.log.Warn("observer: malformed record", "topic", topic, "partition", partition, "offset", offset, "error", err)
}

func (d *decisions) GateOpened() { d.log.Info("observer: gate opened") }

// outcome is the last decision for (group, partition), if any was made.
func (d *decisions) outcome(group string, partition int32) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.last[groupPartition{group, partition}]
	return r, ok
}

// forget drops the decisions recorded for group, so that outcome tells
// whether a decision came after this call.
func (d *decisions) forget(group string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for gp := range d.last {
		if gp.group == group {
			delete(d.last, gp)
		}
	}
}

// emittedFor returns the checkpoints emitted for group.
func (d *decisions) emittedFor(group string) []messages.Checkpoint {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []messages.Checkpoint
	for _, cp := range d.emitted {
		if cp.Group == group {
			out = append(out, cp)
		}
	}
	return out
}

// testLogger writes the instance's log into the test's log until the test
// ends, at level info or $CHECKPOINTD_TEST_LOG_LEVEL.
func testLogger(t *testing.T, name string) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	level := slog.LevelInfo
	if v := os.Getenv("CHECKPOINTD_TEST_LOG_LEVEL"); v != "" { // e.g. debug
		_ = level.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("instance", name)
}

type testLogWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testLogWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(b), "\n"))
	}
	return len(b), nil
}

// ---- topic tails ------------------------------------------------------------

// tail reads partition 0 of a one-partition topic from its oldest offset
// for as long as the test runs, keeping every record in order.
type tail struct {
	topic  string
	client sarama.Client

	mu   sync.Mutex
	recs []*sarama.ConsumerMessage
	next int64
	err  error
}

func startTail(t *testing.T, c *kafkatest.Cluster, topic string) *tail {
	t.Helper()
	client := c.Client(t)
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("consumer of %s: %v", c.Alias, err)
	}
	var pc sarama.PartitionConsumer
	deadline := time.Now().Add(waitTimeout)
	for {
		_ = client.RefreshMetadata(topic)
		if pc, err = consumer.ConsumePartition(topic, 0, sarama.OffsetOldest); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consume %s on %s: %v", topic, c.Alias, err)
		}
		time.Sleep(pollEvery)
	}
	tl := &tail{topic: topic, client: client}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		msgs, errs := pc.Messages(), pc.Errors()
		for msgs != nil || errs != nil {
			select {
			case m, ok := <-msgs:
				if !ok {
					msgs = nil
					continue
				}
				tl.mu.Lock()
				tl.recs = append(tl.recs, m)
				tl.next = m.Offset + 1
				tl.mu.Unlock()
			case e, ok := <-errs:
				if !ok {
					errs = nil
					continue
				}
				tl.mu.Lock()
				tl.err = e
				tl.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		pc.AsyncClose()
		<-stopped
		_ = consumer.Close()
	})
	return tl
}

// records returns what the tail has read so far.
func (tl *tail) records() []*sarama.ConsumerMessage {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.recs)
}

// catchUp waits until the tail has read everything written before the call.
func (tl *tail) catchUp(t *testing.T) {
	t.Helper()
	end, err := tl.client.GetOffset(tl.topic, 0, sarama.OffsetNewest)
	if err != nil {
		t.Fatalf("end offset of %s: %v", tl.topic, err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		tl.mu.Lock()
		next, terr := tl.next, tl.err
		tl.mu.Unlock()
		if next >= end {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tail of %s stuck at %d, end %d (last error %v)", tl.topic, next, end, terr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---- offset syncs and the independent translation -------------------------

// offsetSyncs returns the offset syncs read so far for topic, per partition,
// in the order MM2 wrote them.
func (f *fixture) offsetSyncs(t *testing.T, topic string) map[int32][]messages.OffsetSync {
	t.Helper()
	out := make(map[int32][]messages.OffsetSync)
	for _, rec := range f.syncs.records() {
		s, err := messages.DecodeOffsetSync(rec.Key, rec.Value)
		if err != nil {
			t.Fatalf("offset sync at %s@%d: %v", rec.Topic, rec.Offset, err)
		}
		if s.Topic == topic {
			out[s.Partition] = append(out[s.Partition], s)
		}
	}
	return out
}

// syncList renders syncs in topic order as upstream->downstream.
func syncList(syncs []messages.OffsetSync) string {
	parts := make([]string, len(syncs))
	for i, s := range syncs {
		parts[i] = fmt.Sprintf("%d->%d", s.UpstreamOffset, s.DownstreamOffset)
	}
	return strings.Join(parts, " ")
}

// translation is the test's own answer for a committed source offset g,
// computed from every offset sync read (not from MM2's 64-slot sparse
// history): S is the sync with the greatest upstream offset <= g, and the
// answer is S.d if g == S.u, else S.d+1 (the +1 rule of
// OffsetSyncStore.translateDownstream, KAFKA-12468).
type translation struct {
	ok bool // some sync has upstream <= g
	// want is the answer; a checkpoint may be lower (the sparse history may
	// have dropped S) but never higher: higher would skip records.
	want int64
	// exact is set when g >= the newest sync's upstream offset: the newest
	// sync is in every history, so the checkpoint must equal want.
	exact bool
	via   messages.OffsetSync
}

func translate(syncs []messages.OffsetSync, g int64) translation {
	var tr translation
	for _, s := range syncs { // in topic order: among equal upstreams the later wins, as in MM2
		if s.UpstreamOffset <= g && (!tr.ok || s.UpstreamOffset >= tr.via.UpstreamOffset) {
			tr.ok, tr.via = true, s
		}
	}
	if !tr.ok {
		return tr
	}
	tr.want = tr.via.DownstreamOffset + 1
	if g == tr.via.UpstreamOffset {
		tr.want = tr.via.DownstreamOffset
	}
	newest := syncs[len(syncs)-1]
	tr.exact = g >= newest.UpstreamOffset && tr.via == newest
	return tr
}

// mm2Translation is what MM2's OffsetSyncStore answers for g after every
// sync read (final), and the answers it gave after each prefix of them
// (anyPrefix): a checkpoint decided while the syncs were still coming in
// holds one of those.
func mm2Translation(syncs []messages.OffsetSync, g int64) (final int64, ok bool, anyPrefix map[int64]bool) {
	var st mm2Store
	anyPrefix = make(map[int64]bool)
	for _, s := range syncs {
		st.apply(s.UpstreamOffset, s.DownstreamOffset)
		if d, _ := st.translate(g); d >= 0 {
			anyPrefix[d] = true
		}
	}
	final, ok = st.translate(g)
	return final, ok, anyPrefix
}

// produce writes perPartition records to every partition of the scenario's
// topic in rounds of at most round records per partition, waiting for MM2 to
// mirror each round, as a steady producer would. MM2 sends at most 10 offset
// syncs at a time and keeps only the newest queued one per partition, so a
// burst leaves partitions with hardly any syncs (OffsetSyncWriter's
// firePendingOffsetSyncs).
func (f *fixture) produce(t *testing.T, key string, perPartition, round int) {
	t.Helper()
	topic := f.topics[key]
	for done := 0; done < perPartition; done += round {
		n := min(round, perPartition-done)
		for p := range f.partitions[key] {
			f.bed.Source.Produce(t, topic, p, n)
		}
		f.waitMirrored(t, topic)
	}
}

// waitMirrored waits until the remote topic's end offsets reach the source
// topic's (a fresh topic written by a plain producer: offsets match).
func (f *fixture) waitMirrored(t *testing.T, topic string) {
	t.Helper()
	want, err := endOffsets(f.sourceClient, topic)
	if err != nil {
		t.Fatalf("end offsets of %s on the source: %v", topic, err)
	}
	var got map[int32]int64
	f.waitFor(t, waitTimeout, "MM2 to mirror "+topic, func() error {
		if got, err = endOffsets(f.targetClient, f.remote(topic)); err != nil {
			return err
		}
		for p, end := range want {
			if got[p] < end {
				return fmt.Errorf("partition %d: %d of %d records mirrored", p, got[p], end)
			}
		}
		return nil
	}, func() string { return "\nmm2 log:\n" + f.mm2.LogTail(40) })
}

func endOffsets(client sarama.Client, topic string) (map[int32]int64, error) {
	if err := client.RefreshMetadata(topic); err != nil {
		return nil, err
	}
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(parts))
	for _, p := range parts {
		if out[p], err = client.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return out, nil
}

// settle produces nothing; it waits until MM2 mirrored every record of topic
// and wrote the offset sync of the last record of every partition, and
// returns the end offsets and the syncs. With a running instance it also
// waits until the instance's index holds the newest syncs, and checks that
// the index keeps the same syncs as MM2's store would. Commits made after
// this are translated with the complete sync history.
func (f *fixture) settle(t *testing.T, key string, in *instance) (ends map[int32]int64, syncs map[int32][]messages.OffsetSync) {
	t.Helper()
	topic := f.topics[key]
	f.waitMirrored(t, topic)
	ends, err := endOffsets(f.sourceClient, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	f.waitFor(t, waitTimeout, "offset syncs of the last records of "+topic, func() error {
		syncs = f.offsetSyncs(t, topic)
		for p, end := range ends {
			if end == 0 {
				continue
			}
			ss := syncs[p]
			if len(ss) == 0 {
				return fmt.Errorf("no sync for partition %d yet", p)
			}
			if last := ss[len(ss)-1]; last.UpstreamOffset != end-1 {
				return fmt.Errorf("partition %d: newest sync %v, last record %d", p, last, end-1)
			}
		}
		return nil
	})
	if in == nil {
		return ends, syncs
	}
	index := in.p.Checkpointer().Index()
	f.waitFor(t, waitTimeout, "checkpointd "+in.name+" to index the newest syncs of "+topic, func() error {
		for p, ss := range syncs {
			newest := ss[len(ss)-1]
			got := index.Syncs(messages.TopicPartition{Topic: topic, Partition: p})
			if len(got) == 0 || got[0].Upstream != newest.UpstreamOffset || got[0].Downstream != newest.DownstreamOffset {
				return fmt.Errorf("partition %d: index holds %v, newest sync %v", p, got, newest)
			}
		}
		return nil
	})
	for p, ss := range syncs {
		var st mm2Store
		for _, s := range ss {
			st.apply(s.UpstreamOffset, s.DownstreamOffset)
		}
		var got []int64
		for _, s := range index.Syncs(messages.TopicPartition{Topic: topic, Partition: p}) {
			got = append(got, s.Upstream)
		}
		if want := st.stored(); !slices.Equal(got, want) {
			t.Errorf("%s-%d: the index keeps syncs at upstream %v; MM2's store keeps %v for the syncs %v", topic, p, got, want, upstreams(ss))
		}
	}
	return ends, syncs
}

// ---- checkpoints ------------------------------------------------------------

// checkpointRecord is one record of the checkpoints topic, decoded.
type checkpointRecord struct {
	messages.Checkpoint
	rec *sarama.ConsumerMessage
}

// checkpointsOf returns the checkpoints of group read so far, in topic order.
func (f *fixture) checkpointsOf(t *testing.T, group string) []checkpointRecord {
	t.Helper()
	var out []checkpointRecord
	for _, rec := range f.checkpoints.records() {
		cp, err := messages.DecodeCheckpoint(rec.Key, rec.Value)
		if err != nil {
			t.Fatalf("checkpoint at offset %d does not decode: %v (key %x, value %x)", rec.Offset, err, rec.Key, rec.Value)
		}
		if cp.Group == group {
			out = append(out, checkpointRecord{cp, rec})
		}
	}
	return out
}

// latestCheckpoints returns the last checkpoint of group per target partition.
func latestCheckpoints(cps []checkpointRecord) map[messages.TopicPartition]checkpointRecord {
	out := make(map[messages.TopicPartition]checkpointRecord)
	for _, cp := range cps {
		out[cp.TopicPartition] = cp
	}
	return out
}

// mm2Key and mm2Value encode a checkpoint as MM2's Checkpoint.recordKey and
// recordValue do, written here independently of package messages: big-endian,
// INT16-length strings.
func mm2Key(group, topic string, partition int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(group)))
	b = append(b, group...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
	b = append(b, topic...)
	return binary.BigEndian.AppendUint32(b, uint32(partition))
}

func mm2Value(upstream, downstream int64, metadata string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0) // version 0
	b = binary.BigEndian.AppendUint64(b, uint64(upstream))
	b = binary.BigEndian.AppendUint64(b, uint64(downstream))
	b = binary.BigEndian.AppendUint16(b, uint16(len(metadata)))
	return append(b, metadata...)
}

// checkCheckpoints checks every checkpoint of group on topic's replica: MM2
// bytes (re-encoded byte for byte, by package messages and by the test's own
// encoder), partition 0 of the topic, the renamed topic, an upstream offset
// the group committed, metadata as committed, and a downstream offset that is
// never above the test's own translation from every sync read.
func (f *fixture) checkCheckpoints(t *testing.T, group, topic string, committed map[int32][]int64, metadata string) {
	t.Helper()
	f.checkpoints.catchUp(t)
	syncs := f.offsetSyncs(t, topic)
	for _, cp := range f.checkpointsOf(t, group) {
		rec := cp.rec
		where := fmt.Sprintf("checkpoint at offset %d (%v)", rec.Offset, cp.Checkpoint)
		if rec.Partition != 0 {
			t.Errorf("%s: in partition %d, want 0", where, rec.Partition)
		}
		if !bytes.Equal(cp.Key(), rec.Key) || !bytes.Equal(cp.Value(), rec.Value) {
			t.Errorf("%s: does not re-encode byte for byte:\nkey   %x\n  got %x\nvalue %x\n  got %x", where, cp.Key(), rec.Key, cp.Value(), rec.Value)
		}
		if k, v := mm2Key(cp.Group, cp.Topic, cp.Partition), mm2Value(cp.UpstreamOffset, cp.DownstreamOffset, cp.Metadata); !bytes.Equal(k, rec.Key) || !bytes.Equal(v, rec.Value) {
			t.Errorf("%s: not MM2's bytes:\nkey   %x\n want %x\nvalue %x\n want %x", where, rec.Key, k, rec.Value, v)
		}
		if cp.Topic != f.remote(topic) {
			t.Errorf("%s: topic %q, want %q", where, cp.Topic, f.remote(topic))
			continue
		}
		if cp.Metadata != metadata {
			t.Errorf("%s: metadata %q, want the commit's %q", where, cp.Metadata, metadata)
		}
		if !slices.Contains(committed[cp.Partition], cp.UpstreamOffset) {
			t.Errorf("%s: upstream offset %d was never committed on partition %d (commits %v)", where, cp.UpstreamOffset, cp.Partition, committed[cp.Partition])
			continue
		}
		tr := translate(syncs[cp.Partition], cp.UpstreamOffset)
		switch {
		case !tr.ok:
			t.Errorf("%s: no offset sync at or below upstream %d, so nothing may be emitted (syncs %v)", where, cp.UpstreamOffset, syncs[cp.Partition])
		case cp.DownstreamOffset < 0:
			t.Errorf("%s: negative downstream offset", where)
		case cp.DownstreamOffset > tr.want:
			t.Errorf("%s: downstream %d is above the translation %d (via %v): a consumer resuming there skips records", where, cp.DownstreamOffset, tr.want, tr.via)
		}
		if _, _, anyPrefix := mm2Translation(syncs[cp.Partition], cp.UpstreamOffset); !anyPrefix[cp.DownstreamOffset] {
			t.Errorf("%s: MM2's store never translates upstream %d to %d, whatever part of the syncs it had read (it gives %v; syncs %v)",
				where, cp.UpstreamOffset, cp.DownstreamOffset, slices.Sorted(maps.Keys(anyPrefix)), upstreams(syncs[cp.Partition]))
		}
	}
}

// waitCheckpoints waits until the latest checkpoint of group for every
// partition in commits has the committed upstream offset, and returns those
// checkpoints. Their downstream offsets must be what MM2's store gives for
// every sync read, which, when the commit is at or after the newest sync, is
// also the test's own translation. Callers commit after settle, so
// checkpointd decides with the same syncs.
func (f *fixture) waitCheckpoints(t *testing.T, group, topic string, commits map[int32]int64) map[int32]checkpointRecord {
	t.Helper()
	var out map[int32]checkpointRecord
	f.waitFor(t, waitTimeout, fmt.Sprintf("checkpoints of group %s for %v", group, commits), func() error {
		latest := latestCheckpoints(f.checkpointsOf(t, group))
		out = make(map[int32]checkpointRecord)
		for p, g := range commits {
			cp, ok := latest[messages.TopicPartition{Topic: f.remote(topic), Partition: p}]
			if !ok {
				return fmt.Errorf("partition %d: no checkpoint yet", p)
			}
			if cp.UpstreamOffset != g {
				return fmt.Errorf("partition %d: latest checkpoint %v, want upstream %d", p, cp.Checkpoint, g)
			}
			out[p] = cp
		}
		return nil
	}, func() string {
		var b strings.Builder
		syncs := f.offsetSyncs(t, topic)
		for p, g := range commits {
			want, ok, _ := mm2Translation(syncs[p], g)
			fmt.Fprintf(&b, "\npartition %d: commit %d, MM2's store gives %d (found %v); offset syncs in order: %s", p, g, want, ok, syncList(syncs[p]))
		}
		return b.String()
	})
	syncs := f.offsetSyncs(t, topic)
	for p, cp := range out {
		g := cp.UpstreamOffset
		if tr := translate(syncs[p], g); tr.exact && cp.DownstreamOffset != tr.want {
			t.Errorf("partition %d: checkpoint %v, want downstream %d (via %v)", p, cp.Checkpoint, tr.want, tr.via)
		}
		if want, _, _ := mm2Translation(syncs[p], g); cp.DownstreamOffset != want {
			t.Errorf("partition %d: checkpoint %v, want downstream %d as MM2's store gives for the syncs at %v", p, cp.Checkpoint, want, upstreams(syncs[p]))
		}
	}
	return out
}

// ---- group offsets -----------------------------------------------------------

type groupOffset struct {
	offset   int64
	metadata string
}

// groupOffsets returns group's committed offsets on a cluster.
func groupOffsets(admin sarama.ClusterAdmin, group string) (map[messages.TopicPartition]groupOffset, error) {
	resp, err := admin.ListConsumerGroupOffsets(group, nil)
	if err != nil {
		return nil, err
	}
	if !errors.Is(resp.Err, sarama.ErrNoError) {
		return nil, resp.Err
	}
	blocks := resp.Blocks
	if g := resp.GetGroup(group); g != nil {
		if !errors.Is(g.Err, sarama.ErrNoError) {
			return nil, g.Err
		}
		blocks = g.Blocks
	}
	out := make(map[messages.TopicPartition]groupOffset)
	for topic, parts := range blocks {
		for p, b := range parts {
			if !errors.Is(b.Err, sarama.ErrNoError) {
				return nil, fmt.Errorf("%s-%d: %w", topic, p, b.Err)
			}
			if b.Offset >= 0 {
				out[messages.TopicPartition{Topic: topic, Partition: p}] = groupOffset{b.Offset, b.Metadata}
			}
		}
	}
	return out, nil
}

func (f *fixture) targetOffsets(t *testing.T, group string) map[messages.TopicPartition]groupOffset {
	t.Helper()
	out, err := groupOffsets(f.targetAdmin, group)
	if err != nil {
		t.Fatalf("offsets of group %s on the target: %v", group, err)
	}
	return out
}

// waitTargetFollows waits until group's offsets on the target equal the
// downstream offsets of the given checkpoints (other partitions are not
// looked at) and returns them.
func (f *fixture) waitTargetFollows(t *testing.T, group string, cps map[int32]checkpointRecord) map[messages.TopicPartition]groupOffset {
	t.Helper()
	var got map[messages.TopicPartition]groupOffset
	f.waitFor(t, waitTimeout, "target offsets of group "+group+" to follow its checkpoints", func() error {
		var err error
		if got, err = groupOffsets(f.targetAdmin, group); err != nil {
			return err
		}
		for _, cp := range cps {
			if o, ok := got[cp.TopicPartition]; !ok || o.offset != cp.DownstreamOffset {
				return fmt.Errorf("%s: target offset %+v (present %v), checkpoint %v", cp.TopicPartition, o, ok, cp.Checkpoint)
			}
		}
		return nil
	})
	return got
}

// commit commits offsets for group on the source (a memberless commit) and
// appends them to the history.
func (f *fixture) commit(t *testing.T, group, topic string, offsets map[int32]int64, history map[int32][]int64) {
	t.Helper()
	m := make(map[messages.TopicPartition]int64, len(offsets))
	for p, o := range offsets {
		m[messages.TopicPartition{Topic: topic, Partition: p}] = o
		history[p] = append(history[p], o)
	}
	f.bed.Source.CommitOffsets(t, group, m)
}

// ---- consumer-group members ----------------------------------------------------

// member is one real sarama consumer-group member, consuming until stopped.
type member struct {
	group   sarama.ConsumerGroup
	cancel  context.CancelFunc
	done    chan struct{}
	joined  chan struct{} // closed at the first Setup: the member has an assignment
	stopped bool
}

type claimFunc func(sarama.ConsumerGroupSession, sarama.ConsumerGroupClaim) error

type handler struct {
	once    sync.Once
	joined  chan struct{}
	consume claimFunc
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error {
	h.once.Do(func() { close(h.joined) })
	return nil
}
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	return h.consume(s, c)
}

// join starts a member of groupID on c consuming topic. Auto-commit is off:
// the member commits only what its claim function commits.
func join(t *testing.T, c *kafkatest.Cluster, groupID, topic string, initial int64, consume claimFunc) *member {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.ClientID = "checkpointd-test-member"
	cfg.Consumer.Offsets.Initial = initial
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	g, err := sarama.NewConsumerGroup([]string{c.Bootstrap}, groupID, cfg)
	if err != nil {
		t.Fatalf("consumer group %s on %s: %v", groupID, c.Alias, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{group: g, cancel: cancel, done: make(chan struct{}), joined: make(chan struct{})}
	h := &handler{joined: m.joined, consume: consume}
	go func() {
		for err := range g.Errors() {
			t.Logf("consumer group %s on %s: %v", groupID, c.Alias, err)
		}
	}()
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, h); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(pollEvery):
				}
			}
		}
	}()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// stop leaves the group (LeaveGroup) and waits until the member is gone.
func (m *member) stop(t *testing.T) {
	t.Helper()
	if m.stopped {
		return
	}
	m.stopped = true
	m.cancel()
	if err := m.group.Close(); err != nil {
		t.Errorf("close consumer group: %v", err)
	}
	select {
	case <-m.done:
	case <-time.After(waitTimeout):
		t.Errorf("consumer group member did not stop within %s", waitTimeout)
	}
}

// waitJoined waits until the member has joined and got its partitions.
func (m *member) waitJoined(t *testing.T, what string) {
	t.Helper()
	select {
	case <-m.joined:
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not join its group within %s", what, waitTimeout)
	}
}

// serveMetrics serves a new Metrics and Health for cfg's flow on a loopback
// port until the test ends, and returns them with the server's base URL.
func serveMetrics(t *testing.T, cfg *config.Config) (*metrics.Metrics, *metrics.Health, string) {
	t.Helper()
	m := metrics.New(metrics.Config{Source: cfg.SourceAlias, Target: cfg.TargetAlias, Registry: prometheus.NewRegistry()})
	health := &metrics.Health{}
	srv, err := metrics.Listen("127.0.0.1:0", m, health, testLogger(t, "http"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() { stop(); <-served })
	return m, health, "http://" + srv.Addr()
}
