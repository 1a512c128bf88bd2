package kafkatest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

const (
	mm2Grace        = 20 * time.Second // Connect stops tasks and leaves its group
	mm2ReadyTimeout = 90 * time.Second
)

// MM2Options configures one MirrorMaker 2 process (dedicated mode, one flow
// source->target). The zero value mirrors every topic with offset syncs and no
// checkpoints. On shared clusters, set Topics so that one test's MM2 does not
// copy every other test's topics.
type MM2Options struct {
	Topics string // MM2 "topics": comma-separated regexes; default ".*"
	Groups string // MM2 "groups": comma-separated regexes; default ".*"

	EmitCheckpoints    bool          // run MirrorCheckpointConnector
	CheckpointInterval time.Duration // emit.checkpoints.interval.seconds; default 1 s

	SyncGroupOffsets         bool          // sync.group.offsets.enabled
	SyncGroupOffsetsInterval time.Duration // sync.group.offsets.interval.seconds; default 1 s

	// OffsetLagMax is offset.lag.max; nil keeps MM2's default (100). Zero
	// makes MM2 write an offset sync for every record.
	OffsetLagMax *int64

	// Extra properties go into mm2.properties last and override the above.
	// Flow settings need the flow prefix ("source->target."), worker settings
	// the target alias prefix ("target.").
	Extra map[string]string

	// NoWait returns as soon as the JVM runs, skipping the canary round trip.
	NoWait bool

	// SourceAlias and TargetAlias are the names MM2 gives the bed's source and
	// target clusters (default: the bed's aliases). Aliases of its own keep a
	// test's remote, offset-syncs and checkpoints topics apart from every
	// other test's on the shared clusters.
	SourceAlias, TargetAlias string

	// BothWays also replicates target->source (active/active), with the same
	// topics, groups and settings; the worker of that flow runs on the source
	// cluster. With DefaultReplicationPolicy, a remote topic is never
	// replicated back to where it came from.
	BothWays bool
}

// MM2 is one running MirrorMaker 2 process.
type MM2 struct {
	Name    string        // its Connect group id; its internal topics carry it too
	Dir     string        // mm2.properties and the log; removed on Stop
	Canary  string        // canary topic on the source cluster
	ReadyIn time.Duration // JVM start to canary record on the target

	// SourceAlias and TargetAlias are the clusters' names in this MM2.
	SourceAlias, TargetAlias string

	bed      *Bed
	proc     *javaProc
	stopOnce sync.Once
	stopErr  error
}

// RemoteTopic names topic's replica on the target (DefaultReplicationPolicy).
func (b *Bed) RemoteTopic(topic string) string { return b.Source.Alias + "." + topic }

// OffsetSyncsTopic is where MM2 writes offset syncs: on the source cluster.
func (b *Bed) OffsetSyncsTopic() string { return "mm2-offset-syncs." + b.Target.Alias + ".internal" }

// CheckpointsTopic is where MM2 writes checkpoints: on the target cluster.
func (b *Bed) CheckpointsTopic() string { return b.Source.Alias + ".checkpoints.internal" }

// StartMM2 starts MirrorMaker 2 replicating source to target and, unless
// opts.NoWait, waits until a canary record has been replicated. Each MM2 has
// its own Connect group and internal topics, so MM2s started one after another
// on the shared clusters do not inherit each other's connector configs. The
// process is stopped when the test ends.
func (b *Bed) StartMM2(t testing.TB, opts MM2Options) *MM2 {
	t.Helper()
	m := &MM2{Name: UniqueName(t, "mm2"), Canary: UniqueName(t, "canary"), bed: b,
		SourceAlias: cmp.Or(opts.SourceAlias, b.Source.Alias), TargetAlias: cmp.Or(opts.TargetAlias, b.Target.Alias)}
	if m.SourceAlias == m.TargetAlias {
		t.Fatalf("start mm2: source and target alias are both %q", m.SourceAlias)
	}
	dir, err := os.MkdirTemp(b.Dir, "mm2-")
	if err != nil {
		t.Fatalf("start mm2: create dir: %v", err)
	}
	m.Dir = dir

	if !opts.NoWait {
		// Created before MM2 starts, so its first topic listing finds it.
		b.Source.CreateTopic(t, m.Canary, 1, nil)
		b.Source.Produce(t, m.Canary, 0, 1)
	}
	propsPath := filepath.Join(dir, "mm2.properties")
	if err := writeProperties(propsPath, m.properties(opts)); err != nil {
		t.Fatalf("start mm2: %v", err)
	}
	log4j := filepath.Join(dir, "log4j2.properties")
	logFile := filepath.Join(dir, "mm2.log")
	if err := os.WriteFile(log4j, []byte(log4j2Properties(logFile)), 0o644); err != nil {
		t.Fatalf("start mm2: write log4j config: %v", err)
	}
	flags := append(append([]string{}, testJVMFlags...),
		"-Dlog4j2.configurationFile="+log4j, "-Djava.io.tmpdir="+dir)
	start := time.Now()
	m.proc, err = startJava("mm2", b.Lib, dir, logFile, flags, "org.apache.kafka.connect.mirror.MirrorMaker", propsPath)
	if err != nil {
		t.Fatalf("start mm2: %v", err)
	}
	if err := b.addMM2(m); err != nil {
		_ = m.stop()
		t.Fatalf("start mm2: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Errorf("stop mm2: %v", err)
		}
	})
	if opts.NoWait {
		return m
	}
	if err := m.waitCanary(); err != nil {
		t.Fatalf("start mm2: %v\n%s", err, m.LogTail(60))
	}
	m.ReadyIn = time.Since(start)
	return m
}

// properties renders mm2.properties for the flow source->target and, with
// opts.BothWays, target->source.
func (m *MM2) properties(opts MM2Options) map[string]string {
	src, tgt := m.SourceAlias, m.TargetAlias
	topics := cmp.Or(opts.Topics, ".*")
	if !opts.NoWait {
		topics += "," + m.Canary
	}
	p := map[string]string{
		"clusters":                 src + ", " + tgt,
		src + ".bootstrap.servers": m.bed.Source.Bootstrap,
		tgt + ".bootstrap.servers": m.bed.Target.Bootstrap,
		// Heartbeats would add a herder for every other pair.
		"emit.heartbeats.enabled":               "false",
		"tasks.max":                             "1",
		"replication.factor":                    "1",
		"checkpoints.topic.replication.factor":  "1",
		"heartbeats.topic.replication.factor":   "1",
		"offset-syncs.topic.replication.factor": "1",
		"offset.storage.replication.factor":     "1",
		"config.storage.replication.factor":     "1",
		"status.storage.replication.factor":     "1",
		"offset.storage.partitions":             "1",
		"status.storage.partitions":             "1",
	}
	flow := map[string]string{
		"enabled":                             "true",
		"topics":                              topics,
		"groups":                              cmp.Or(opts.Groups, ".*"),
		"emit.checkpoints.enabled":            strconv.FormatBool(opts.EmitCheckpoints),
		"emit.checkpoints.interval.seconds":   seconds(opts.CheckpointInterval),
		"sync.group.offsets.enabled":          strconv.FormatBool(opts.SyncGroupOffsets),
		"sync.group.offsets.interval.seconds": seconds(opts.SyncGroupOffsetsInterval),
		// The defaults (10 min) would miss topics and groups created after start.
		"refresh.topics.interval.seconds": "2",
		"refresh.groups.interval.seconds": "2",
		"sync.topic.acls.enabled":         "false", // no authorizer on the brokers
	}
	if opts.OffsetLagMax != nil {
		flow["offset.lag.max"] = strconv.FormatInt(*opts.OffsetLagMax, 10)
	}
	// Worker settings are read only with the prefix of the flow's target. The
	// flush interval is when batched offset syncs go out (default 60 s).
	worker := map[string]string{
		"offset.flush.interval.ms":         "1000",
		"plugin.discovery":                 "service_load", // skip the slow classpath scan
		"scheduled.rebalance.max.delay.ms": "0",
		"group.id":                         m.Name,
		"offset.storage.topic":             "mm2-offsets." + m.Name + ".internal",
		"config.storage.topic":             "mm2-configs." + m.Name + ".internal",
		"status.storage.topic":             "mm2-status." + m.Name + ".internal",
	}
	for k, v := range flow {
		p[src+"->"+tgt+"."+k] = v
	}
	for k, v := range worker {
		p[tgt+"."+k] = v
	}
	p[tgt+"->"+src+".enabled"] = "false"
	if opts.BothWays {
		for k, v := range flow {
			p[tgt+"->"+src+"."+k] = v
		}
		for k, v := range worker {
			p[src+"."+k] = v
		}
	}
	maps.Copy(p, opts.Extra)
	return p
}

// seconds renders an interval in MM2's whole seconds, 1 s by default and at least 1.
func seconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
}

// waitCanary waits until the canary record is on the target: the connector
// is configured, its task runs and the data path works.
func (m *MM2) waitCanary() error {
	tgt := m.bed.Target
	client, err := sarama.NewClient(tgt.Brokers(), tgt.SaramaConfig())
	if err != nil {
		return fmt.Errorf("client of %s: %w", tgt.Alias, err)
	}
	defer client.Close()
	remote := m.SourceAlias + "." + m.Canary
	deadline := time.Now().Add(mm2ReadyTimeout)
	for {
		if m.proc.exited() {
			return fmt.Errorf("mm2 exited early (%v)", m.proc.waitErr)
		}
		ends, err := partitionOffsets(client, remote, sarama.OffsetNewest)
		if err == nil && ends[0] > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("canary %s not replicated to %s within %s (last: %v, ends %v)", m.Canary, remote, mm2ReadyTimeout, err, ends)
		}
		time.Sleep(pollInterval)
	}
}

// WaitReplicated waits until every record now in topic on the source is in its
// remote topic on the target, and returns the target's records. It compares
// end offsets, so it suits topics written by plain (non-transactional)
// producers and never compacted.
func (m *MM2) WaitReplicated(t testing.TB, topic string) []*sarama.ConsumerMessage {
	t.Helper()
	return m.waitReplicated(t, m.bed.Source, m.bed.Target, topic, m.SourceAlias+"."+topic)
}

// WaitReplicatedBack is WaitReplicated for a topic on the target, replicated
// to the source by an MM2 started with BothWays.
func (m *MM2) WaitReplicatedBack(t testing.TB, topic string) []*sarama.ConsumerMessage {
	t.Helper()
	return m.waitReplicated(t, m.bed.Target, m.bed.Source, topic, m.TargetAlias+"."+topic)
}

func (m *MM2) waitReplicated(t testing.TB, from, to *Cluster, topic, remote string) []*sarama.ConsumerMessage {
	t.Helper()
	want := from.EndOffsets(t, topic)
	client := to.Client(t)
	start := time.Now()
	for {
		got, err := partitionOffsets(client, remote, sarama.OffsetNewest)
		if err == nil && caughtUp(got, want) {
			break
		}
		if m.proc.exited() {
			t.Fatalf("mm2 exited (%v) before %s was replicated\n%s", m.proc.waitErr, topic, m.LogTail(60))
		}
		if time.Since(start) > mm2ReadyTimeout {
			t.Fatalf("%s not replicated to %s on %s within %s: want ends %v, got %v (%v)\n%s", topic, remote, to.Alias, mm2ReadyTimeout, want, got, err, m.LogTail(60))
		}
		time.Sleep(pollInterval)
	}
	return to.ReadAll(t, remote)
}

func caughtUp(got, want map[int32]int64) bool {
	for p, end := range want {
		if got[p] < end {
			return false
		}
	}
	return len(got) >= len(want)
}

// Pid is the MirrorMaker JVM's process id.
func (m *MM2) Pid() int { return m.proc.pid() }

// LogTail returns the last n lines of MirrorMaker's log and console output.
func (m *MM2) LogTail(n int) string { return m.proc.tail(n) }

// Stop stops MirrorMaker (SIGTERM, SIGKILL after 20 s) and removes its dir.
// It is safe to call more than once.
func (m *MM2) Stop() error {
	m.bed.removeMM2(m)
	return m.stop()
}

func (m *MM2) stop() error {
	m.stopOnce.Do(func() {
		var errs []error
		if m.proc != nil {
			errs = append(errs, m.proc.stop(mm2Grace))
		}
		if err := os.RemoveAll(m.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", m.Dir, err))
		}
		if err := errors.Join(errs...); err != nil {
			m.stopErr = fmt.Errorf("stop mm2 %s: %w", m.Name, err)
		}
	})
	return m.stopErr
}
