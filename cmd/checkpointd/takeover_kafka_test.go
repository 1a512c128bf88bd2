package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/history"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestShardedHandover runs three `checkpointd run` processes syncing target
// groups while groups commit steadily on the source, and checks that every
// stage is sharded by source group: in a steady spell each group's target
// commits come from exactly one instance, and every instance commits some.
// Then it kills one instance with SIGKILL (not restarted), another with
// SIGKILL restarted at once under its name (static membership), adds a
// fourth and restarts one gracefully, and checks what a hand-over must
// keep: no checkpoint goes backwards, no target group offset is lowered,
// every source commit reaches the target, the killed instance's groups
// resume within the session timeout and a few seconds, the groups of the
// other instances keep going, and an instance paused (SIGSTOP) past its
// session lands nothing over its shards' new owners once resumed. It logs
// the pauses it measures.
func TestShardedHandover(t *testing.T) {
	t.Parallel()
	// A 3-broker target: the target groups' coordinators and the
	// checkpoints topic's leader are spread over brokers, and one broker
	// restarts under load below.
	bed := kafkatest.SharedThreeBrokerTarget(t)
	bin := buildBinary(t)

	name := kafkatest.UniqueName(t, "")
	suffix := name[len(name)-8:]
	src, tgt := "tksrc"+suffix, "tktgt"+suffix
	topic := "orders-" + suffix
	remote := src + "." + topic
	syncsTopic, checkpoints := "mm2-offset-syncs."+tgt+".internal", src+".checkpoints.internal"
	// 24 groups over 50 __consumer_offsets partitions: each of 3 instances
	// owns some (all 24 on one or two would happen about once in 10^4).
	const partitions, groups = 2, 24
	compact := map[string]string{"cleanup.policy": "compact"}
	bed.Source.CreateTopic(t, topic, partitions, nil)
	bed.Target.CreateTopic(t, remote, partitions, nil)
	bed.Source.CreateTopic(t, syncsTopic, 1, compact)
	bed.Target.CreateTopic(t, checkpoints, 1, compact)
	groupName := func(g int) string { return fmt.Sprintf("tk-%s-g%d", suffix, g) }

	load := startSteadyCommits(t, bed.Source, topic, syncsTopic, partitions, groups, groupName)
	watch := watchTargetGroups(t, bed.Target, remote, partitions, groups, groupName)

	props := map[string]string{
		"source.cluster.alias": src, "target.cluster.alias": tgt,
		"source.cluster.bootstrap.servers": bed.Source.Bootstrap, "target.cluster.bootstrap.servers": bed.Target.Bootstrap,
		"groups": "tk-" + suffix + "-.*", "checkpoints.topic.replication.factor": "1",
		"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1",
		"checkpointd.group.id": "checkpointd-" + suffix,
		// 3 s instead of the default 6 s (the lowest session stock brokers
		// allow): the test bed's brokers allow 2 s, as a cluster must for a
		// hand-over under 5 s.
		"checkpointd.commit.lease.session.timeout.ms": "3000",
	}
	// Static membership, as in a pod with CHECKPOINTD_CONSUMER_GROUP_INSTANCE_ID
	// set to its name: a restarted process takes its place back at once.
	start := func(name string) *proc {
		return startProc(t, bin, name, withProp(props, "consumer.group.instance.id", name))
	}
	procs := map[string]*proc{}
	for i := range 3 {
		name := fmt.Sprintf("cpd%d", i)
		procs[name] = start(name)
	}
	for _, p := range procs {
		p.waitReady(t, 60*time.Second)
	}
	for g := range groups {
		watch.reached(t, g, load.nextRound(time.Now()).offset, 30*time.Second)
	}

	// Who commits what, over a steady spell.
	owners := committers(t, values(procs), groups, groupName, 4*time.Second)
	perProc := map[string]int{}
	for g, who := range owners {
		if len(who) != 1 {
			t.Errorf("group %d committed by %v in one steady spell, want exactly one instance", g, who)
			continue
		}
		perProc[who[0]]++
	}
	t.Logf("groups committed per instance in a steady spell: %v", perProc)
	for name := range procs {
		if perProc[name] == 0 {
			t.Errorf("%s committed no group: the commit stage is not sharded (%v)", name, perProc)
		}
	}

	// kill -9 of an instance that does not come back (a lost node), then of
	// one that restarts at once (a container restarted in place).
	for _, victim := range []struct {
		name    string
		restart bool
	}{{"cpd0", false}, {"cpd1", true}} {
		mine := map[int]bool{}
		for g, who := range owners {
			if len(who) == 1 && who[0] == victim.name {
				mine[g] = true
			}
		}
		others := map[int]bool{}
		for g := range groups {
			if !mine[g] {
				others[g] = true
			}
		}
		p := procs[victim.name]
		killedAt := time.Now()
		if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		delete(procs, victim.name)
		what := "not restarted"
		if victim.restart {
			procs[victim.name] = start(victim.name)
			what = "restarted at once"
		}
		firstAfter := load.nextRound(killedAt)
		var resumed time.Duration
		for g := range mine {
			resumed = max(resumed, watch.reached(t, g, firstAfter.offset, 30*time.Second).Sub(killedAt))
		}
		time.Sleep(2 * time.Second)
		og, gap := watch.maxGapOf(killedAt, time.Now(), others)
		t.Logf("kill -9 of %s (%s, %d of %d groups): its groups committed again %v after the kill; longest pause of another instance's group %v (group %d)",
			victim.name, what, len(mine), groups, resumed.Round(time.Millisecond), gap.Round(time.Millisecond), og)
		// The session timeout (3 s) bounds the wait; a few seconds more for
		// the rejoin, the restore and a loaded machine.
		if resumed > 10*time.Second {
			t.Errorf("the killed instance's groups resumed %v after the kill, want within the 3 s session timeout and a few seconds", resumed)
		}
		if gap > 5*time.Second {
			t.Errorf("a group of a surviving instance paused %v after %s's kill", gap, victim.name)
		}
		for _, q := range values(procs) {
			for _, line := range q.linesSince(killedAt, "restored newly owned shards", "joined consumer group") {
				t.Logf("  %s: %s", q.name, line)
			}
		}
		if victim.restart {
			procs[victim.name].waitReady(t, 60*time.Second)
		}
		owners = committers(t, values(procs), groups, groupName, 4*time.Second)
		for g, who := range owners {
			if len(who) != 1 {
				t.Errorf("after %s's kill: group %d committed by %v in one steady spell, want exactly one instance", victim.name, g, who)
			}
		}
	}

	// A paused instance (SIGSTOP, as a frozen VM or a long GC pause would)
	// loses its shards when its session expires; once resumed it must not
	// land a commit over what the new owners committed meanwhile (the
	// fence), and it rejoins as an ordinary member.
	{
		paused := procs["cpd2"]
		mine := map[int]bool{}
		for g, who := range owners {
			if len(who) == 1 && who[0] == paused.name {
				mine[g] = true
			}
		}
		pausedAt := time.Now()
		if err := syscall.Kill(paused.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		firstAfter := load.nextRound(pausedAt)
		var moved time.Duration
		for g := range mine {
			moved = max(moved, watch.reached(t, g, firstAfter.offset, 30*time.Second).Sub(pausedAt))
		}
		time.Sleep(2 * time.Second)
		if err := syscall.Kill(paused.cmd.Process.Pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		resumedAt := time.Now()
		paused.waitReady(t, 60*time.Second)
		time.Sleep(3 * time.Second)
		g, gap := watch.maxGap(resumedAt, time.Now())
		t.Logf("SIGSTOP of %s (%d groups) for %v: its groups committed by the others %v after the pause; after SIGCONT the longest pause of any group %v (group %d)",
			paused.name, len(mine), resumedAt.Sub(pausedAt).Round(time.Millisecond), moved.Round(time.Millisecond), gap.Round(time.Millisecond), g)
		if lowered := watch.lowered(); len(lowered) > 0 {
			t.Logf("offsets read lower than before (judged by checkCommitsMonotonic) after %s resumed: %v", paused.name, lowered)
		}
		owners = committers(t, values(procs), groups, groupName, 4*time.Second)
		for g, who := range owners {
			if len(who) != 1 {
				t.Errorf("after %s resumed: group %d committed by %v in one steady spell, want exactly one instance", paused.name, g, who)
			}
		}
	}

	// A target broker restarts under load (graceful stop: its partition
	// leaders and group coordinators move to the others, then some back).
	{
		node := bed.Target.NodeIDs()[1]
		stoppedAt := time.Now()
		if err := bed.Target.StopNode(node); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if err := bed.Target.RestartNode(t.Context(), node); err != nil {
			t.Fatal(err)
		}
		back := time.Since(stoppedAt)
		firstAfter := load.nextRound(time.Now())
		var caughtUp time.Duration
		for g := range groups {
			caughtUp = max(caughtUp, watch.reached(t, g, firstAfter.offset, 60*time.Second).Sub(stoppedAt))
		}
		g, gap := watch.maxGap(stoppedAt, time.Now())
		t.Logf("target broker %d stopped and restarted (serving again after %v): every group at a commit made after its return %v after the stop; longest pause of a target group's commits %v (group %d)",
			node, back.Round(time.Millisecond), caughtUp.Round(time.Millisecond), gap.Round(time.Millisecond), g)
		if lowered := watch.lowered(); len(lowered) > 0 {
			t.Logf("offsets read lower than before (judged by checkCommitsMonotonic) around the broker restart: %v", lowered)
		}
	}

	// Scale-out: a fourth instance joins; some __consumer_offsets partitions
	// move to it and are restored there. Then a rolling restart of one
	// instance (SIGTERM, started again under its name).
	added := time.Now()
	procs["cpd3"] = start("cpd3")
	procs["cpd3"].waitReady(t, 60*time.Second)
	time.Sleep(4 * time.Second)
	g, gap := watch.maxGap(added, time.Now())
	t.Logf("scale-out to %d instances: longest pause of a target group's commits %v (group %d; commits every 100 ms)", len(procs), gap.Round(time.Millisecond), g)

	restarted := time.Now()
	procs["cpd2"].stop()
	procs["cpd2"] = start("cpd2")
	procs["cpd2"].waitReady(t, 60*time.Second)
	healed := time.Now() // the last fault of the run
	back := time.Since(restarted)
	time.Sleep(4 * time.Second)
	g, gap = watch.maxGap(restarted, time.Now())
	t.Logf("restart of cpd2 (SIGTERM, ready again after %v, same group.instance.id): longest pause of a target group's commits %v (group %d)",
		back.Round(time.Millisecond), gap.Round(time.Millisecond), g)

	last := load.stop(t)
	for g := range groups {
		watch.reached(t, g, last.offset, 30*time.Second)
	}
	watch.stop()
	if lowered := watch.lowered(); len(lowered) > 0 {
		t.Logf("offsets read lower than before (judged by checkCommitsMonotonic): %v", lowered)
	}
	checkCommitsMonotonic(t, bed.Target, remote, "tk-"+suffix+"-g")
	checkCheckpointsMonotonic(t, bed.Target, checkpoints)

	// The whole history, judged offline. The test writes the offset syncs
	// itself, each record at the same offset on both sides (Identity).
	// Before the last fault healed commits may wait for it; after, each
	// must be on the target within 10 s.
	h := history.Read(t, history.ReadOptions{
		Source: bed.Source, Target: bed.Target,
		Groups: func(g string) bool { return strings.HasPrefix(g, "tk-"+suffix+"-g") },
		Topics: func(s string) bool { return s == topic }, Remote: func(s string) string { return src + "." + s },
		SyncsTopic: syncsTopic, CheckpointsTopic: checkpoints,
	})
	h.Replicated, h.Healed, h.Bound, h.SyncsTarget = history.Identity{}, healed, 10*time.Second, true
	// The load had stopped and every group reached its last commit before
	// the history was read: nothing more was to come, so every commit is
	// judged, as if the run had gone on for the bound.
	h.End = h.End.Add(h.Bound)
	if st := history.Verify(t, h); st.Judged == 0 {
		t.Error("history: no commit judged")
	}
	t.Logf("%d commit rounds; every group at offset %d on the target", last.n, last.offset)
}

// logTime is the time of a log line.
var logTime = regexp.MustCompile(`^time=(\S+) `)

// linesSince returns the process's log lines written at or after since that
// hold any of subs.
func (p *proc) linesSince(since time.Time, subs ...string) []string {
	data, _ := os.ReadFile(p.log)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		m := logTime.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil || at.Before(since.Truncate(time.Millisecond)) {
			continue
		}
		for _, sub := range subs {
			if strings.Contains(line, sub) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

// committedLine is one group's committed target commits in /metrics.
var committedLine = regexp.MustCompile(`^checkpointd_target_commits_total\{([^}]*)\} (\S+)$`)

// committed scrapes one process's count of committed target partitions
// per group.
func (p *proc) committed(t *testing.T) map[string]float64 {
	t.Helper()
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatalf("%s metrics: %v", p.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s metrics: %v", p.name, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		m := committedLine.FindStringSubmatch(line)
		if m == nil || !strings.Contains(m[1], `reason="committed"`) {
			continue
		}
		g := regexp.MustCompile(`group="([^"]*)"`).FindStringSubmatch(m[1])
		v, err := strconv.ParseFloat(m[2], 64)
		if g != nil && err == nil {
			out[g[1]] += v
		}
	}
	return out
}

// committers returns, per group, the instances whose count of committed
// target partitions of the group grew over spell.
func committers(t *testing.T, procs []*proc, groups int, groupName func(int) string, spell time.Duration) map[int][]string {
	t.Helper()
	before := map[string]map[string]float64{}
	for _, p := range procs {
		before[p.name] = p.committed(t)
	}
	time.Sleep(spell)
	out := map[int][]string{}
	for _, p := range procs {
		after := p.committed(t)
		for g := range groups {
			if after[groupName(g)] > before[p.name][groupName(g)] {
				out[g] = append(out[g], p.name)
			}
		}
	}
	for g := range groups {
		slices.Sort(out[g])
	}
	return out
}

func withProp(props map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(props)+1)
	for pk, pv := range props {
		out[pk] = pv
	}
	out[k] = v
	return out
}

func values(procs map[string]*proc) []*proc {
	out := make([]*proc, 0, len(procs))
	for _, p := range procs {
		out = append(out, p)
	}
	return out
}

// buildBinary builds checkpointd into the test's temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "checkpointd")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proc is one `checkpointd run` process.
type proc struct {
	name, addr, log string
	cmd             *exec.Cmd
	done            chan struct{}
}

func startProc(t *testing.T, bin, name string, props map[string]string) *proc {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, addr: l.Addr().String(), log: filepath.Join(dir, "checkpointd.log"), done: make(chan struct{})}
	l.Close()
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s: %q\n", k, v)
	}
	fmt.Fprintf(&b, "checkpointd.metrics.address: %q\ncheckpointd.instance.id: %q\n", p.addr, name)
	cfg := filepath.Join(dir, "checkpointd.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.Command(bin, "run", "--config", cfg)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	var env []string // none of the harness's CHECKPOINTD_* or OTEL_*: they are config
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHECKPOINTD_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	p.cmd.Env = append(env, "OTEL_SDK_DISABLED=true")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s's log:\n%s", p.name, p.tail(25))
		}
	})
	return p
}

// stop stops the process gracefully (SIGTERM), killing it after 20 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) tail(n int) string {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (p *proc) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	client := http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.done:
			t.Fatalf("%s exited:\n%s", p.name, p.tail(25))
		default:
		}
		if resp, err := client.Get("http://" + p.addr + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within %v:\n%s", p.name, timeout, p.tail(25))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// round is one round of source commits: every group at offset on every
// partition.
type round struct {
	n       int
	started time.Time // when its first commit was sent
	at      time.Time // when its commits were acknowledged
	offset  int64
}

// steadyCommits writes, ten times a second, an offset sync 10 offsets
// further on each partition and commits every group just past it, so every
// round's commits translate to exactly their own offset on the target.
type steadyCommits struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	rounds []round
	err    error
}

func startSteadyCommits(t *testing.T, c *kafkatest.Cluster, topic, syncsTopic string, partitions int32, groups int, groupName func(int) string) *steadyCommits {
	t.Helper()
	client := c.Client(t)
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &steadyCommits{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer producer.Close()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for n := 1; ctx.Err() == nil; n++ {
			started := time.Now()
			upstream := int64(n) * 10
			var msgs []*sarama.ProducerMessage
			for p := range partitions {
				s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: topic, Partition: p}, UpstreamOffset: upstream, DownstreamOffset: upstream}
				msgs = append(msgs, &sarama.ProducerMessage{Topic: syncsTopic, Key: sarama.ByteEncoder(s.Key()), Value: sarama.ByteEncoder(s.Value())})
			}
			err := producer.SendMessages(msgs)
			for g := 0; g < groups && err == nil; g++ {
				err = commitGroup(client, groupName(g), topic, partitions, upstream+1)
			}
			l.mu.Lock()
			if err != nil {
				l.err = err
				l.mu.Unlock()
				return
			}
			l.rounds = append(l.rounds, round{n: n, started: started, at: time.Now(), offset: upstream + 1})
			l.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-l.done })
	return l
}

// commitGroup commits offset on every partition for group, as a client that
// manages its own group does (generation -1), retrying a moving coordinator.
func commitGroup(client sarama.Client, group, topic string, partitions int32, offset int64) error {
	req := sarama.NewOffsetCommitRequest(client.Config(), group)
	for p := range partitions {
		req.AddBlockWithLeaderEpoch(topic, p, offset, -1, 0, "")
	}
	var err error
	for range 20 {
		var coord *sarama.Broker
		if coord, err = client.Coordinator(group); err == nil {
			var resp *sarama.OffsetCommitResponse
			if resp, err = coord.CommitOffset(req); err == nil {
				for _, parts := range resp.Errors {
					for _, kerr := range parts {
						if !errors.Is(kerr, sarama.ErrNoError) {
							err = kerr
						}
					}
				}
				if err == nil {
					return nil
				}
			}
		}
		_ = client.RefreshCoordinator(group)
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("commit %s at %d: %w", group, offset, err)
}

// nextRound waits for the first round whose commits were all made after at.
func (l *steadyCommits) nextRound(at time.Time) round {
	for {
		l.mu.Lock()
		for _, r := range l.rounds {
			if r.started.After(at) {
				l.mu.Unlock()
				return r
			}
		}
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the commits and returns the last round.
func (l *steadyCommits) stop(t *testing.T) round {
	t.Helper()
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		t.Fatalf("source commits failed: %v", l.err)
	}
	return l.rounds[len(l.rounds)-1]
}

// targetWatch reads the target groups' offsets every 50 ms, noting when each
// group's offset changed and any read lower than the read before. Such a
// read is logged, not failed: while a coordinator moves (a broker
// restarting) the old one may still answer from its cache after the new
// one took a newer commit. Whether a commit lowered an offset is judged
// from the commits themselves (checkCommitsMonotonic).
type targetWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	at   map[int]map[int64]time.Time // group -> lowest offset on every partition -> first seen
	low  []string
	last map[string]int64
}

func watchTargetGroups(t *testing.T, c *kafkatest.Cluster, remote string, partitions int32, groups int, groupName func(int) string) *targetWatch {
	t.Helper()
	admin := c.Admin(t)
	ctx, cancel := context.WithCancel(context.Background())
	w := &targetWatch{cancel: cancel, done: make(chan struct{}), at: make(map[int]map[int64]time.Time), last: make(map[string]int64)}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			for g := range groups {
				resp, err := admin.ListConsumerGroupOffsets(groupName(g), map[string][]int32{remote: []int32{0, 1}[:partitions]})
				if err != nil {
					continue
				}
				now := time.Now()
				lowest := int64(-1)
				w.mu.Lock()
				for p := range partitions {
					b := resp.GetBlock(remote, p)
					if b == nil || b.Offset < 0 {
						lowest = -1
						break
					}
					key := fmt.Sprintf("%s/%d", groupName(g), p)
					if prev, ok := w.last[key]; ok && b.Offset < prev {
						w.low = append(w.low, fmt.Sprintf("%s %d -> %d", key, prev, b.Offset))
					}
					w.last[key] = b.Offset
					if lowest < 0 || b.Offset < lowest {
						lowest = b.Offset
					}
				}
				if lowest >= 0 {
					if w.at[g] == nil {
						w.at[g] = make(map[int64]time.Time)
					}
					if _, seen := w.at[g][lowest]; !seen {
						w.at[g][lowest] = now
					}
				}
				w.mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(w.stop)
	return w
}

// reached waits until group g is at offset or beyond on every partition and
// returns when that was first seen.
func (w *targetWatch) reached(t *testing.T, g int, offset int64, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		var first time.Time
		for off, at := range w.at[g] {
			if off >= offset && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		w.mu.Unlock()
		if !first.IsZero() {
			return first
		}
		if time.Now().After(deadline) {
			t.Fatalf("target group %d not at offset %d within %v", g, offset, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *targetWatch) stop() { w.cancel(); <-w.done }

// maxGap returns the group whose target offsets went longest without moving
// between from and to, and for how long (from the last move before from).
func (w *targetWatch) maxGap(from, to time.Time) (int, time.Duration) {
	return w.maxGapOf(from, to, nil)
}

// maxGapOf is maxGap over the groups in of (every group when nil).
func (w *targetWatch) maxGapOf(from, to time.Time, of map[int]bool) (int, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	worst, longest := -1, time.Duration(0)
	for g, seen := range w.at {
		if of != nil && !of[g] {
			continue
		}
		var times []time.Time
		for _, at := range seen {
			times = append(times, at)
		}
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		prev := time.Time{}
		for _, at := range append(times, to) {
			if at.After(from) && !prev.IsZero() {
				if d := at.Sub(prev); d > longest {
					worst, longest = g, d
				}
			}
			if at.After(to) {
				break
			}
			prev = at
		}
	}
	return worst, longest
}

func (w *targetWatch) lowered() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.low...)
}

// checkCommitsMonotonic reads the target's __consumer_offsets, where every
// commit of a group is a record of one partition in the order the
// coordinator applied them, and fails the test if a commit of a group whose
// name starts with prefix ever lowers a partition of topic: the polls of
// watchTargetGroups sample the offsets; this sees every commit.
func checkCommitsMonotonic(t *testing.T, c *kafkatest.Cluster, topic, prefix string) {
	t.Helper()
	last := make(map[string]int64)
	n := 0
	for _, m := range c.ReadAll(t, "__consumer_offsets") {
		r, err := messages.DecodeOffsetsRecord(m.Key, m.Value)
		if err != nil || r.Kind != messages.OffsetCommitRecord || r.Tombstone ||
			!strings.HasPrefix(r.Group, prefix) || r.Topic != topic {
			continue
		}
		n++
		key := fmt.Sprintf("%s/%d", r.Group, r.Partition)
		if prev, ok := last[key]; ok && r.Offset < prev {
			t.Errorf("target commit lowered %s from %d to %d (__consumer_offsets partition %d, offset %d)", key, prev, r.Offset, m.Partition, m.Offset)
		}
		last[key] = r.Offset
	}
	if n == 0 {
		t.Errorf("no commit of groups %s* on %s found in the target's __consumer_offsets", prefix, topic)
	}
	t.Logf("%d target commits of %d (group, partition) pairs read back from __consumer_offsets", n, len(last))
}

// checkCheckpointsMonotonic reads the checkpoints topic and fails the test
// if a (group, partition) checkpoint is ever lower than the one before it:
// the source groups here never rewind.
func checkCheckpointsMonotonic(t *testing.T, c *kafkatest.Cluster, topic string) {
	t.Helper()
	last := make(map[string]int64)
	n := 0
	for _, m := range c.ReadAll(t, topic) {
		cp, err := messages.DecodeCheckpoint(m.Key, m.Value)
		if err != nil {
			t.Errorf("checkpoint at offset %d: %v", m.Offset, err)
			continue
		}
		n++
		key := cp.Group + "/" + cp.TopicPartition.String()
		if prev, ok := last[key]; ok && cp.DownstreamOffset < prev {
			t.Errorf("checkpoint of %s went backwards at offset %d: %d after %d", key, m.Offset, cp.DownstreamOffset, prev)
		}
		last[key] = cp.DownstreamOffset
	}
	t.Logf("%d checkpoints of %d (group, partition) pairs, none backwards", n, len(last))
}
