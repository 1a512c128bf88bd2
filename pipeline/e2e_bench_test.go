package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/pipeline"
)

// e2eBenchEnv turns TestE2EDelay on. Without it the test skips, so plain
// `go test ./...` and `make test` never run it; with it and no Kafka it fails.
const e2eBenchEnv = "CHECKPOINTD_E2E_BENCH"

// The load of every phase: e2eGroups groups commit on e2ePartitions
// partitions, e2ePerPair commits per (group, partition) spread over
// e2eWindow, one partition per OffsetCommit request.
const (
	e2eGroups     = 100
	e2ePartitions = 4
	e2ePerPair    = 3
	e2eWindow     = 60 * time.Second // one 60 s MM2 interval: commits cover every phase of its timers
	e2eRecords    = 100              // per partition, produced before the commits
	e2eRound      = 10               // records per partition per produce round
	e2ePoll       = 50 * time.Millisecond
)

// e2ePhase is one writer of the checkpoints topic, measured on its own.
type e2ePhase struct {
	name        string
	checkpointd bool          // checkpointd checkpoints and syncs; MM2 only mirrors
	interval    time.Duration // MM2: emit.checkpoints and sync.group.offsets interval
	bound       time.Duration // after its commit, a target offset not seen by then is missing
	warmUp      bool          // wait until a warm-up commit reached the target first
}

// TestE2EDelay measures the delay from a source group commit to the target
// group's committed offset reflecting it (the translated offset of that
// commit, or more), for checkpointd and for MirrorMaker 2's own checkpoint
// connector with 1 s and 60 s intervals. The phases run one after another,
// each with fresh topic and groups and its own MM2, so that only one writer
// of source.checkpoints.internal runs at a time. Results go to the test log
// and are appended to bin/bench-e2e.txt.
//
//	CHECKPOINTD_E2E_BENCH=1 go test -count=1 -timeout 20m -run '^TestE2EDelay$' -v ./pipeline/
func TestE2EDelay(t *testing.T) {
	if os.Getenv(e2eBenchEnv) == "" {
		t.Skipf("end-to-end delay benchmark on real Kafka (about 5 minutes): set %s=1 to run it", e2eBenchEnv)
	}
	if testing.Short() {
		t.Fatalf("%s is set but -short skips real Kafka: drop -short", e2eBenchEnv)
	}
	began := time.Now()
	bed := kafkatest.Shared(t)
	out := kafkatest.BenchOut(t, "bench-e2e.txt")
	fmt.Fprintf(out, "\n# %s  end-to-end delay, source commit -> target group offset; Kafka %s, %s, %d CPUs\n",
		time.Now().UTC().Format(time.RFC3339), kafkatest.KafkaVersion, runtime.Version(), runtime.NumCPU())
	fmt.Fprintf(out, "# %d groups x %d partitions x %d commits over %s, one partition per commit, offset.lag.max=0, target polled every %s\n",
		e2eGroups, e2ePartitions, e2ePerPair, e2eWindow, e2ePoll)
	fmt.Fprintf(out, "# polled: commit -> a target poll shows it (<= %s + RTT late); exact: commit -> broker time of the target commit (target __consumer_offsets);\n", e2ePoll)
	fmt.Fprintf(out, "# cp: commit -> checkpoint read from the checkpoints topic; sync: checkpoint read -> target poll shows it. missing: not polled within the bound\n")
	fmt.Fprintf(out, "# %-12s %7s %5s %7s %6s | %-8s %8s %8s %8s | %-8s %8s %8s %8s | %-8s %8s | %-8s %8s\n",
		"phase", "commits", "seen", "missing", "failed",
		"polled", "p90", "p99", "max", "exact", "p90", "p99", "max", "cp", "p99", "sync", "max")
	fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("# %-12s %7s %5s %7s %6s | %-8s %8s %8s %8s | %-8s %8s %8s %8s | %-8s %8s | %-8s %8s",
		"", "", "", "", "", "median", "", "", "", "median", "", "", "", "median", "", "median", ""), " "))
	_ = out.Sync()

	shared := &e2eShared{
		bed:         bed,
		sourceCfg:   bed.Source.SaramaConfig(),
		source:      bed.Source.Client(t),
		target:      bed.Target.Client(t),
		targetAdmin: bed.Target.Admin(t),
		out:         out,
	}
	(&fixture{bed: bed, targetAdmin: shared.targetAdmin}).precreateCheckpointsTopic(t)

	phases := []e2ePhase{
		{name: "checkpointd", checkpointd: true, bound: 30 * time.Second, warmUp: true},
		{name: "mm2-1s", interval: time.Second, bound: 30 * time.Second, warmUp: true},
		// Up to one emit interval to the checkpoint and one sync interval to
		// the target: 120 s, plus slack.
		{name: "mm2-60s", interval: 60 * time.Second, bound: 150 * time.Second},
	}
	for _, ph := range phases {
		t.Run(ph.name, func(t *testing.T) { shared.run(t, ph) })
	}
	t.Logf("e2e delay benchmark took %s; results appended to %s", time.Since(began).Round(time.Second), out.Name())
	fmt.Fprintf(out, "# run took %s\n", time.Since(began).Round(time.Second))
}

// e2eShared is what the phases share: the clusters and clients.
type e2eShared struct {
	bed         *kafkatest.Bed
	sourceCfg   *sarama.Config
	source      sarama.Client
	target      sarama.Client
	targetAdmin sarama.ClusterAdmin
	out         *os.File
}

// e2ePair is a (group, source partition).
type e2ePair struct {
	group     string
	partition int32
}

// e2eCommit is one measured source commit.
type e2eCommit struct {
	e2ePair
	offset int64 // committed on the source
	want   int64 // its translation: the target offset that reflects it
	due    time.Duration
	at     time.Time // sent
	err    error     // the commit failed: not measured
	cpAt   time.Time // a checkpoint with upstream >= offset was read
	seenAt time.Time // a poll showed the target offset >= want (when its answer came)
	logAt  time.Time // the target commit that made it so (its broker timestamp)
}

func (s *e2eShared) run(t *testing.T, ph e2ePhase) {
	bed := s.bed
	phaseStart := time.Now()
	const key = "e2e"
	topic := kafkatest.UniqueName(t, "e2e")
	base := kafkatest.UniqueName(t, "e2e-grp")
	groups := make([]string, e2eGroups)
	for i := range groups {
		groups[i] = fmt.Sprintf("%s-%03d", base, i)
	}
	warm := base + "-warm"
	groupsRegex := base + "-.*" // the names are literal regexes: [A-Za-z0-9-]
	bed.Source.CreateTopic(t, topic, e2ePartitions, nil)
	remote := bed.RemoteTopic(topic)

	// Every group has a commit on the topic before MM2 starts: the checkpoint
	// connector only checkpoints groups it found with offsets on a mirrored
	// topic, and a group found later restarts its task.
	zero := make(map[int32]int64)
	for p := range int32(e2ePartitions) {
		zero[p] = 0
	}
	for _, g := range append(slices.Clone(groups), warm) {
		if err := s.commit(g, topic, zero); err != nil {
			t.Fatalf("initial commit of %s: %v", g, err)
		}
	}

	lagMax := int64(0)
	opts := kafkatest.MM2Options{Topics: topic, OffsetLagMax: &lagMax}
	if ph.checkpointd {
		opts.Groups = "no-group-is-named-like-this-checkpointd-e2e"
	} else {
		opts.Groups = groupsRegex
		opts.EmitCheckpoints, opts.CheckpointInterval = true, ph.interval
		opts.SyncGroupOffsets, opts.SyncGroupOffsetsInterval = true, ph.interval
	}
	mm2 := bed.StartMM2(t, opts)
	t.Logf("mm2 ready in %s", mm2.ReadyIn.Round(time.Millisecond))

	f := &fixture{
		bed:        bed,
		mm2:        mm2,
		topics:     map[string]string{key: topic},
		partitions: map[string]int32{key: e2ePartitions},
		// After MM2 started: the first one creates the topic.
		syncs:        startTail(t, bed.Source, bed.OffsetSyncsTopic()),
		targetAdmin:  s.targetAdmin,
		sourceClient: s.source,
		targetClient: s.target,
		running:      make(map[*instance]struct{}),
	}
	var in *instance
	if ph.checkpointd {
		props := f.props(t, []string{groupsRegex}, "offsets-log")
		in = startQuiet(t, f, "e2e", loadConfig(t, writeConfig(t, "checkpointd.yaml", props)))
	} else {
		// The checkpoint task logs its groups when it starts.
		want := fmt.Sprintf("checkpointing %d consumer groups", len(groups)+1)
		f.waitFor(t, waitTimeout, "MM2's checkpoint task to start with every group", func() error {
			if !strings.Contains(mm2.LogTail(1<<20), want) {
				return fmt.Errorf("no log line %q yet", want)
			}
			return nil
		}, func() string { return "\nmm2 log:\n" + mm2.LogTail(40) })
	}

	// Records in rounds, so MM2 writes offset syncs throughout (a sync per
	// record it can: offset.lag.max=0), then nothing more: the sync store is
	// fixed while commits are measured.
	f.produce(t, key, e2eRecords, e2eRound)
	ends, syncs := f.settle(t, key, in)
	candidates := make(map[int32][]int64)
	for p := range int32(e2ePartitions) {
		candidates[p] = exactOffsets(t, syncs[p], ends[p])
		if len(candidates[p]) < e2ePerPair {
			t.Fatalf("partition %d: only %d commit offsets translate exactly (%v), need %d; syncs %s", p, len(candidates[p]), candidates[p], e2ePerPair, syncList(syncs[p]))
		}
		t.Logf("partition %d: end %d, %d offset syncs, commit offsets %v", p, ends[p], len(syncs[p]), candidates[p])
	}

	tr := newE2ETracker()
	stopWatch := s.watchCheckpoints(t, tr, remote)
	stopLog := s.watchTargetLog(t, tr, remote)
	stopPoll := s.pollTarget(t, tr, append(slices.Clone(groups), warm), remote)

	if ph.warmUp {
		// One commit through the whole chain before measuring.
		c := &e2eCommit{e2ePair: e2ePair{warm, 0}, offset: ends[0], want: ends[0]}
		s.send(tr, c, topic)
		if c.err != nil {
			t.Fatalf("warm-up commit: %v", c.err)
		}
		f.waitFor(t, waitTimeout, "the warm-up commit to reach the target", func() error {
			if tr.seen(c).IsZero() {
				return fmt.Errorf("target offset of %s-0 not at %d yet", warm, c.want)
			}
			return nil
		}, func() string { return "\nmm2 log:\n" + mm2.LogTail(40) })
		t.Logf("warm-up commit reached the target in %s", tr.seen(c).Sub(c.at).Round(time.Millisecond))
	}

	// The schedule: every (group, partition) commits e2ePerPair increasing
	// offsets, window/e2ePerPair apart, from a random phase, so the commit
	// times cover the window evenly.
	var commits []*e2eCommit
	step := e2eWindow / e2ePerPair
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0xe2e))
	for gi, g := range groups {
		for p := range int32(e2ePartitions) {
			phase := time.Duration(rng.Int64N(int64(step)))
			for k, off := range pickIncreasing(candidates[p], e2ePerPair, gi+int(p)) {
				commits = append(commits, &e2eCommit{
					e2ePair: e2ePair{g, p}, offset: off, want: off,
					due: phase + time.Duration(k)*step,
				})
			}
		}
	}
	slices.SortFunc(commits, func(a, b *e2eCommit) int { return int(a.due - b.due) })
	for _, c := range commits {
		if w, ok, _ := mm2Translation(syncs[c.partition], c.offset); !ok || w != c.want {
			t.Fatalf("commit %d on partition %d: MM2's store translates it to %d (found %v), want %d", c.offset, c.partition, w, ok, c.want)
		}
	}

	t.Logf("committing %d offsets over %s", len(commits), e2eWindow)
	start := time.Now()
	for _, c := range commits {
		if d := time.Until(start.Add(c.due)); d > 0 {
			time.Sleep(d)
		}
		s.send(tr, c, topic)
		if ph.checkpointd {
			f.checkRunning(t)
		}
	}
	last := time.Now()
	t.Logf("commits sent in %s; waiting up to %s for the rest", last.Sub(start).Round(time.Millisecond), ph.bound)
	for time.Now().Before(last.Add(ph.bound)) && tr.unseen() > 0 {
		if ph.checkpointd {
			f.checkRunning(t)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopPoll()
	stopWatch()
	time.Sleep(time.Second) // the target log tail is behind the polls by a fetch at most
	stopLog()

	if ph.interval >= 10*time.Second {
		t.Logf("%s: %s", ph.name, tr.timers(start))
	}
	res := summarize(commits, ph.bound)
	odd := tr.oddities(commits)
	if res.logSeen != res.seen {
		odd = append(odd, fmt.Sprintf("%d commits were polled on the target but %d timed from its __consumer_offsets", res.seen, res.logSeen))
	}
	t.Logf("%s: %s", ph.name, res)
	for _, o := range odd {
		t.Logf("%s: odd: %s", ph.name, o)
	}
	// A delay is only meaningful if every commit arrived: one that never
	// reached the target within the bound is a lost offset, not a slow one.
	if n, lines := missingCommits(commits, ph.bound); n > 0 {
		t.Errorf("%s: %d of %d commits did not reach the target group within %s:\n%s",
			ph.name, n, len(commits), ph.bound, strings.Join(lines, "\n"))
	}
	if ph.checkpointd {
		f.stop(t, in)
	} else {
		logMM2Problems(t, mm2)
	}
	stopAt := time.Now()
	if err := mm2.Stop(); err != nil {
		t.Errorf("stop mm2: %v", err)
	}
	t.Logf("mm2 stopped in %s; phase took %s", time.Since(stopAt).Round(time.Millisecond), time.Since(phaseStart).Round(time.Second))
	fmt.Fprintf(s.out, "  %-12s %7d %5d %7d %6d | %-8s %8s %8s %8s | %-8s %8s %8s %8s | %-8s %8s | %-8s %8s\n", ph.name,
		res.commits, res.seen, res.missing, res.failed,
		ms(res.median), ms(res.p90), ms(res.p99), ms(res.max),
		ms(res.logMedian), ms(res.logP90), ms(res.logP99), ms(res.logMax),
		ms(res.cpMedian), ms(res.cpP99), ms(res.syncMedian), ms(res.syncMax))
	for _, o := range odd {
		fmt.Fprintf(s.out, "  # %s: %s\n", ph.name, o)
	}
	_ = s.out.Sync()
}

// exactOffsets are the commit offsets of a partition that both MM2's store
// and the test's own translation (from every sync) map to themselves: the
// sync points MM2's store keeps (fresh topic: downstream == upstream) and the
// end, one past the newest sync. Offset 0 is left out (the initial commits).
func exactOffsets(t *testing.T, syncs []messages.OffsetSync, end int64) []int64 {
	t.Helper()
	var st mm2Store
	for _, s := range syncs {
		st.apply(s.UpstreamOffset, s.DownstreamOffset)
	}
	kept := st.stored()
	kept = append(kept, end)
	slices.Sort(kept)
	kept = slices.Compact(kept)
	var out []int64
	for _, g := range kept {
		if g <= 0 {
			continue
		}
		w, ok, _ := mm2Translation(syncs, g)
		tr := translate(syncs, g)
		if ok && w == g && tr.ok && tr.want == g {
			out = append(out, g)
		}
	}
	return out
}

// pickIncreasing picks n strictly increasing values from the sorted list,
// one from each of n consecutive buckets, varied by seed.
func pickIncreasing(list []int64, n, seed int) []int64 {
	out := make([]int64, n)
	for k := range n {
		lo, hi := k*len(list)/n, (k+1)*len(list)/n
		out[k] = list[lo+seed%(hi-lo)]
	}
	return out
}

// startQuiet starts checkpointd in-process like fixture.start, logging only
// warnings and errors (unless $CHECKPOINTD_TEST_LOG_LEVEL says otherwise):
// a thousand commits would flood the test log at info.
func startQuiet(t *testing.T, f *fixture, name string, cfg *config.Config) *instance {
	t.Helper()
	w := &testLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	level := slog.LevelWarn
	if v := os.Getenv("CHECKPOINTD_TEST_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("instance", name)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p, err := pipeline.New(ctx, cfg, pipeline.WithLogger(logger))
	if err != nil {
		t.Fatalf("pipeline.New (%s): %v", name, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	in := &instance{name: name, p: p, cancel: stop, done: make(chan error, 1)}
	go func() { in.done <- p.Run(runCtx) }()
	f.mu.Lock()
	f.running[in] = struct{}{}
	f.mu.Unlock()
	t.Cleanup(func() { f.stop(t, in) })
	return in
}

// commit is a memberless commit (generation -1, no member id), as
// kafkatest.Cluster.CommitOffsets makes, on one long-lived client.
func (s *e2eShared) commit(group, topic string, offsets map[int32]int64) error {
	req := sarama.NewOffsetCommitRequest(s.sourceCfg, group)
	for p, off := range offsets {
		req.AddBlockWithLeaderEpoch(topic, p, off, -1, 0, "")
	}
	var last error
	for attempt := range 20 {
		if attempt > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		coord, err := s.source.Coordinator(group)
		if err != nil {
			last = err
			continue
		}
		resp, err := coord.CommitOffset(req)
		if err != nil {
			_ = s.source.RefreshCoordinator(group)
			last = err
			continue
		}
		last = nil
		for tpc, parts := range resp.Errors {
			for p, kerr := range parts {
				if !errors.Is(kerr, sarama.ErrNoError) {
					last = fmt.Errorf("%s-%d: %w", tpc, p, kerr)
				}
			}
		}
		if last == nil {
			return nil
		}
		if !retriableGroupErr(last) {
			return last
		}
		_ = s.source.RefreshCoordinator(group)
	}
	return last
}

func retriableGroupErr(err error) bool {
	return errors.Is(err, sarama.ErrOffsetsLoadInProgress) ||
		errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable) ||
		errors.Is(err, sarama.ErrNotCoordinatorForConsumer)
}

// send registers c with the tracker and commits it on the source.
func (s *e2eShared) send(tr *e2eTracker, c *e2eCommit, topic string) {
	tr.add(c) // sets c.at
	if err := s.commit(c.group, topic, map[int32]int64{c.partition: c.offset}); err != nil {
		tr.fail(c, err)
	}
}

// ---- observing the target ------------------------------------------------------

// e2eTracker matches what the target shows against the commits made.
type e2eTracker struct {
	mu       sync.Mutex
	pending  map[e2ePair][]*e2eCommit // not yet seen on the target, in commit order
	cpWait   map[e2ePair][]*e2eCommit // no checkpoint read yet
	logWait  map[e2ePair][]*e2eCommit // no target commit read yet
	cpTimes  []time.Time              // every checkpoint read for the topic
	logTimes []time.Time              // every target commit read for the topic
	observed map[e2ePair][]int64      // distinct target offsets, in the order seen
	lowered  []string
	pollErrs int
	firstErr error
}

func newE2ETracker() *e2eTracker {
	return &e2eTracker{
		pending:  make(map[e2ePair][]*e2eCommit),
		cpWait:   make(map[e2ePair][]*e2eCommit),
		logWait:  make(map[e2ePair][]*e2eCommit),
		observed: make(map[e2ePair][]int64),
	}
}

func (tr *e2eTracker) add(c *e2eCommit) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	c.at = time.Now()
	tr.pending[c.e2ePair] = append(tr.pending[c.e2ePair], c)
	tr.cpWait[c.e2ePair] = append(tr.cpWait[c.e2ePair], c)
	tr.logWait[c.e2ePair] = append(tr.logWait[c.e2ePair], c)
}

func (tr *e2eTracker) fail(c *e2eCommit, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	c.err = err
	tr.pending[c.e2ePair] = slices.DeleteFunc(tr.pending[c.e2ePair], func(x *e2eCommit) bool { return x == c })
	tr.cpWait[c.e2ePair] = slices.DeleteFunc(tr.cpWait[c.e2ePair], func(x *e2eCommit) bool { return x == c })
	tr.logWait[c.e2ePair] = slices.DeleteFunc(tr.logWait[c.e2ePair], func(x *e2eCommit) bool { return x == c })
}

func (tr *e2eTracker) seen(c *e2eCommit) time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return c.seenAt
}

func (tr *e2eTracker) unseen() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, cs := range tr.pending {
		n += len(cs)
	}
	return n
}

// target records a target offset read by a poll answered at time at.
func (tr *e2eTracker) target(pair e2ePair, offset int64, at time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	obs := tr.observed[pair]
	if n := len(obs); n == 0 || obs[n-1] != offset {
		if n > 0 && offset < obs[n-1] {
			tr.lowered = append(tr.lowered, fmt.Sprintf("%s-%d: %d -> %d", pair.group, pair.partition, obs[n-1], offset))
		}
		tr.observed[pair] = append(obs, offset)
	}
	cs := tr.pending[pair]
	i := 0
	for ; i < len(cs) && cs[i].want <= offset; i++ {
		cs[i].seenAt = at
	}
	tr.pending[pair] = cs[i:]
}

// targetCommit records a commit into a target group, written at time at.
func (tr *e2eTracker) targetCommit(pair e2ePair, offset int64, at time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.logTimes = append(tr.logTimes, at)
	cs := tr.logWait[pair]
	i := 0
	for ; i < len(cs) && cs[i].want <= offset; i++ {
		cs[i].logAt = at
	}
	tr.logWait[pair] = cs[i:]
}

// checkpoint records a checkpoint read at time at.
func (tr *e2eTracker) checkpoint(pair e2ePair, upstream int64, at time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.cpTimes = append(tr.cpTimes, at)
	cs := tr.cpWait[pair]
	i := 0
	for ; i < len(cs) && cs[i].offset <= upstream; i++ {
		cs[i].cpAt = at
	}
	tr.cpWait[pair] = cs[i:]
}

func (tr *e2eTracker) pollError(err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.pollErrs++
	if tr.firstErr == nil {
		tr.firstErr = err
	}
}

// bursts groups times that lie less than gap apart and renders each group's
// first time, relative to since, with its size.
func bursts(times []time.Time, gap time.Duration, since time.Time) string {
	ts := slices.Clone(times)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var out []string
	for i := 0; i < len(ts); {
		j := i + 1
		for j < len(ts) && ts[j].Sub(ts[j-1]) < gap {
			j++
		}
		out = append(out, fmt.Sprintf("%+.1fs (%d)", ts[i].Sub(since).Seconds(), j-i))
		i = j
	}
	return strings.Join(out, " ")
}

// timers renders when the checkpoints and the target commits came, in
// bursts: with long MM2 intervals, one per emit and one per sync.
func (tr *e2eTracker) timers(since time.Time) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return fmt.Sprintf("checkpoints read at %s; target commits at %s (seconds after the first measured commit, records)",
		bursts(tr.cpTimes, 3*time.Second, since), bursts(tr.logTimes, 3*time.Second, since))
}

// oddities lists what a correct writer never does: a target offset that went
// down, or one that is no commit's translation (nor the initial 0).
func (tr *e2eTracker) oddities(commits []*e2eCommit) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	wants := make(map[e2ePair]map[int64]bool)
	for _, c := range commits {
		if wants[c.e2ePair] == nil {
			wants[c.e2ePair] = map[int64]bool{0: true}
		}
		wants[c.e2ePair][c.want] = true
	}
	var out []string
	if len(tr.lowered) > 0 {
		out = append(out, fmt.Sprintf("%d target offsets went down, e.g. %s", len(tr.lowered), tr.lowered[0]))
	}
	var stray []string
	for pair, obs := range tr.observed {
		if wants[pair] == nil {
			continue // the warm-up group
		}
		for _, o := range obs {
			if !wants[pair][o] {
				stray = append(stray, fmt.Sprintf("%s-%d at %d", pair.group, pair.partition, o))
			}
		}
	}
	if len(stray) > 0 {
		slices.Sort(stray)
		out = append(out, fmt.Sprintf("%d target offsets are no commit's translation, e.g. %s", len(stray), stray[0]))
	}
	if tr.pollErrs > 0 {
		out = append(out, fmt.Sprintf("%d target polls failed, first: %v", tr.pollErrs, tr.firstErr))
	}
	return out
}

// pollTarget reads the groups' committed offsets on the target every
// e2ePoll in one batched OffsetFetch, and timestamps each commit when the
// target reflects it. The time is when the answer arrived, so the delays are
// at most one poll plus one round trip late (watchTargetLog has the exact
// times).
func (s *e2eShared) pollTarget(t *testing.T, tr *e2eTracker, groups []string, remote string) (stop func()) {
	t.Helper()
	parts := make([]int32, e2ePartitions)
	for i := range parts {
		parts[i] = int32(i)
	}
	req := make(map[string]map[string][]int32, len(groups))
	for _, g := range groups {
		req[g] = map[string][]int32{remote: parts}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(e2ePoll)
		defer tick.Stop()
		for {
			resp, err := s.targetAdmin.ListConsumerGroupOffsetsBatch(req)
			now := time.Now()
			if err != nil {
				tr.pollError(err)
			}
			for g, gr := range resp {
				if gr == nil || !errors.Is(gr.Err, sarama.ErrNoError) {
					if gr != nil && !errors.Is(gr.Err, sarama.ErrGroupIDNotFound) {
						tr.pollError(fmt.Errorf("group %s: %w", g, gr.Err))
					}
					continue
				}
				for p, b := range gr.Blocks[remote] {
					if errors.Is(b.Err, sarama.ErrNoError) && b.Offset >= 0 {
						tr.target(e2ePair{g, p}, b.Offset, now)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	return stop
}

// watchCheckpoints reads the checkpoints topic from its current end and
// timestamps each commit when a checkpoint of its (group, partition) with an
// upstream offset at or past it is read.
func (s *e2eShared) watchCheckpoints(t *testing.T, tr *e2eTracker, remote string) (stop func()) {
	t.Helper()
	topic := s.bed.CheckpointsTopic()
	consumer, err := sarama.NewConsumerFromClient(s.target)
	if err != nil {
		t.Fatalf("consumer of the target: %v", err)
	}
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetNewest)
	if err != nil {
		t.Fatalf("consume %s: %v", topic, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m, ok := <-pc.Messages():
				if !ok {
					return
				}
				now := time.Now()
				cp, err := messages.DecodeCheckpoint(m.Key, m.Value)
				if err != nil || cp.Topic != remote {
					continue
				}
				tr.checkpoint(e2ePair{cp.Group, cp.Partition}, cp.UpstreamOffset, now)
			case err, ok := <-pc.Errors():
				if !ok {
					return
				}
				tr.pollError(fmt.Errorf("checkpoints tail: %w", err))
			}
		}
	}()
	stop = sync.OnceFunc(func() {
		pc.AsyncClose()
		<-done
		_ = consumer.Close()
	})
	t.Cleanup(stop)
	return stop
}

// watchTargetLog reads the target's __consumer_offsets from its current end
// and timestamps each commit with the broker time of the first target commit
// of its (group, partition) at or past its translation: the exact moment the
// target group's offset reflected it (both brokers and this process share
// the machine's clock; milliseconds).
func (s *e2eShared) watchTargetLog(t *testing.T, tr *e2eTracker, remote string) (stop func()) {
	t.Helper()
	const topic = "__consumer_offsets"
	consumer, err := sarama.NewConsumerFromClient(s.target)
	if err != nil {
		t.Fatalf("consumer of the target: %v", err)
	}
	if err := s.target.RefreshMetadata(topic); err != nil {
		t.Fatalf("metadata of %s on the target: %v", topic, err)
	}
	parts, err := s.target.Partitions(topic)
	if err != nil || len(parts) == 0 {
		t.Fatalf("partitions of %s on the target: %v (%d)", topic, err, len(parts))
	}
	var pcs []sarama.PartitionConsumer
	var wg sync.WaitGroup
	for _, p := range parts {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("consume %s-%d on the target: %v", topic, p, err)
		}
		pcs = append(pcs, pc)
		wg.Go(func() {
			for m := range pc.Messages() {
				r, err := messages.DecodeOffsetsRecord(m.Key, m.Value)
				if err != nil || r.Kind != messages.OffsetCommitRecord || r.Tombstone || r.Topic != remote {
					continue
				}
				tr.targetCommit(e2ePair{r.Group, r.Partition}, r.Offset, time.UnixMilli(r.CommitTimestamp))
			}
		})
		wg.Go(func() {
			for err := range pc.Errors() {
				tr.pollError(fmt.Errorf("target %s tail: %w", topic, err))
			}
		})
	}
	stop = sync.OnceFunc(func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		wg.Wait()
		_ = consumer.Close()
	})
	t.Cleanup(stop)
	return stop
}

// ---- results ----------------------------------------------------------------------

type e2eResult struct {
	commits, seen, missing, failed int
	median, p90, p99, max, mean    time.Duration // commit -> target offset polled (at most e2ePoll+RTT late)
	logSeen                        int           // of the seen, how many the target's log timed too
	logMedian, logP90, logP99      time.Duration // commit -> target commit's broker timestamp
	logMax, logMean                time.Duration
	cpMedian, cpP99                time.Duration // commit -> checkpoint read
	syncMedian, syncMax            time.Duration // checkpoint read -> target offset
	bound                          time.Duration
}

func (r e2eResult) String() string {
	return fmt.Sprintf("%d commits, %d seen on the target, %d missing after %s, %d failed to commit; "+
		"polled delay median %s p90 %s p99 %s max %s mean %s; "+
		"exact delay (target commit's broker time, %d commits) median %s p90 %s p99 %s max %s mean %s; "+
		"commit to checkpoint read median %s p99 %s; checkpoint read to target poll median %s max %s",
		r.commits, r.seen, r.missing, r.bound, r.failed, ms(r.median), ms(r.p90), ms(r.p99), ms(r.max), ms(r.mean),
		r.logSeen, ms(r.logMedian), ms(r.logP90), ms(r.logP99), ms(r.logMax), ms(r.logMean),
		ms(r.cpMedian), ms(r.cpP99), ms(r.syncMedian), ms(r.syncMax))
}

func summarize(commits []*e2eCommit, bound time.Duration) e2eResult {
	r := e2eResult{commits: len(commits), bound: bound}
	var ds, logs, cps, syncs []time.Duration
	for _, c := range commits {
		switch {
		case c.err != nil:
			r.failed++
		case c.seenAt.IsZero() || c.seenAt.Sub(c.at) > bound:
			r.missing++
		default:
			r.seen++
			ds = append(ds, c.seenAt.Sub(c.at))
			if !c.logAt.IsZero() {
				logs = append(logs, max(0, c.logAt.Sub(c.at)))
			}
			if !c.cpAt.IsZero() {
				syncs = append(syncs, max(0, c.seenAt.Sub(c.cpAt)))
			}
		}
		if c.err == nil && !c.cpAt.IsZero() {
			cps = append(cps, c.cpAt.Sub(c.at))
		}
	}
	r.median, r.p90, r.p99, r.max, r.mean = quantile(ds, 0.5), quantile(ds, 0.9), quantile(ds, 0.99), quantile(ds, 1), mean(ds)
	r.logSeen = len(logs)
	r.logMedian, r.logP90, r.logP99, r.logMax, r.logMean = quantile(logs, 0.5), quantile(logs, 0.9), quantile(logs, 0.99), quantile(logs, 1), mean(logs)
	r.cpMedian, r.cpP99 = quantile(cps, 0.5), quantile(cps, 0.99)
	r.syncMedian, r.syncMax = quantile(syncs, 0.5), quantile(syncs, 1)
	return r
}

// missingCommits counts the commits that summarize counts as missing and
// describes the first 20, each with how far it got.
func missingCommits(commits []*e2eCommit, bound time.Duration) (n int, lines []string) {
	const shown = 20
	for _, c := range commits {
		if c.err != nil || (!c.seenAt.IsZero() && c.seenAt.Sub(c.at) <= bound) {
			continue
		}
		if n++; n > shown {
			continue
		}
		got := "no checkpoint read"
		if !c.cpAt.IsZero() {
			got = fmt.Sprintf("checkpoint read after %s", ms(c.cpAt.Sub(c.at)))
		}
		if !c.seenAt.IsZero() {
			got += fmt.Sprintf(", target reached it after %s", ms(c.seenAt.Sub(c.at)))
		}
		lines = append(lines, fmt.Sprintf("  group %s partition %d: commit %d (target offset %d wanted): %s",
			c.group, c.partition, c.offset, c.want, got))
	}
	if n > shown {
		lines = append(lines, fmt.Sprintf("  and %d more", n-shown))
	}
	return n, lines
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// quantile is the nearest-rank q-quantile; -1 for no data.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	if d < 10*time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// logMM2Problems puts MM2's warnings and errors into the test log.
func logMM2Problems(t *testing.T, m *kafkatest.MM2) {
	t.Helper()
	var bad []string
	for _, line := range strings.Split(m.LogTail(1<<20), "\n") {
		if strings.Contains(line, " ERROR ") || strings.Contains(line, " WARN ") {
			bad = append(bad, line)
		}
	}
	if len(bad) == 0 {
		return
	}
	t.Logf("mm2 logged %d warnings and errors; the first ones:", len(bad))
	for _, line := range bad[:min(len(bad), 15)] {
		t.Log(line)
	}
}
