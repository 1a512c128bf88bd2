//go:build linux

// Package scale is a system benchmark on real Kafka: checkpointd (the built
// binary, a separate process) against MirrorMaker 2's MirrorCheckpointConnector
// in a Kafka Connect standalone worker, on the same two clusters with the same
// load, one system after the other. See TestScale.
package scale

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

// benchEnv turns the benchmark on; without it TestScale skips, so plain
// `go test ./...` never runs it. With it and no Java/Kafka it fails.
const (
	benchEnv     = "CHECKPOINTD_SCALE_BENCH"
	scenariosEnv = "CHECKPOINTD_SCALE_SCENARIOS" // comma list, "default" or "all"
	timeEnv      = "CHECKPOINTD_SCALE_TIME"      // factor on load durations, e.g. 0.25
	systemsEnv   = "CHECKPOINTD_SCALE_SYSTEMS"   // "checkpointd,mm2" (default both)
	outEnv       = "CHECKPOINTD_SCALE_OUT"       // results dir; default bench/results
	extraEnv     = "CHECKPOINTD_SCALE_PROPS"     // extra checkpointd properties, "k=v,k=v"
	// noopEnv=1 runs bench/scale/cmd/noophandler in checkpointd's place:
	// the same service plus no-op typed handlers, to measure their cost.
	noopEnv = "CHECKPOINTD_SCALE_NOOP_HANDLER"
)

// scenario is one load shape, run once per system.
type scenario struct {
	Name       string  `json:"name"`
	Kind       string  `json:"kind"` // steady, first-start, broker-stop
	Groups     int     `json:"groups"`
	Partitions int     `json:"partitions"` // of the one topic; every commit covers all
	Rate       float64 `json:"rate"`       // OffsetCommit requests per second
	Load       dur     `json:"load"`       // how long the commits go on
	StopAt     dur     `json:"stop_at,omitempty"`
	StopFor    dur     `json:"stop_for,omitempty"`
	Heavy      bool    `json:"heavy"` // not in the default run

	// Scale-out, checkpointd only: with Instances > 1 the load runs with one
	// instance, then with Instances sharing it (kind kill: with Instances
	// only), each CPU-capped at CPUQuota cores when set.
	Instances int               `json:"instances,omitempty"`
	CPUQuota  float64           `json:"cpu_quota,omitempty"`  // cores per checkpointd process (cgroup v1 CFS quota); 0: no cap
	KillAt    dur               `json:"kill_at,omitempty"`    // kind kill: SIGKILL of one instance this far into the load
	SyncEvery dur               `json:"sync_every,omitempty"` // the producer's round; 0: syncRound
	Props     map[string]string `json:"props,omitempty"`      // checkpointd properties of this scenario
}

// scaleOut says whether the scenario compares checkpointd instance counts
// (each phase on clusters of its own) rather than systems.
func (sc scenario) scaleOut() bool { return sc.Instances > 1 }

// instanceCounts are the phases of a scale-out scenario: how many
// checkpointd instances each runs.
func (sc scenario) instanceCounts() []int {
	if sc.Kind == "kill" {
		return []int{sc.Instances}
	}
	return []int{1, sc.Instances}
}

// round is how often the producer writes a record to every partition.
func (sc scenario) round() time.Duration {
	if sc.SyncEvery > 0 {
		return time.Duration(sc.SyncEvery)
	}
	return syncRound
}

const restartedEvent = "target broker: serving again"

// recovery is the time from the target broker serving again to the first
// sample with no timed pair waiting; -1 when there was no restart or no such
// sample.
func recovery(samples []sample, events []event) dur {
	i := slices.IndexFunc(events, func(e event) bool { return e.What == restartedEvent })
	if i < 0 {
		return -1
	}
	at := events[i].T
	for _, sm := range samples {
		if sm.T >= at && sm.Backlog == 0 {
			return dur((sm.T - at) * float64(time.Second))
		}
	}
	return -1
}

// syncRound is how often a record goes to every partition (and MM2 writes an
// offset sync for it): see producer.
const syncRound = 5 * time.Second

var scenarios = []scenario{
	{Name: "steady-100", Kind: "steady", Groups: 100, Partitions: 4, Rate: 400, Load: dur(60 * time.Second)},
	{Name: "steady-1k-500", Kind: "steady", Groups: 1000, Partitions: 4, Rate: 500, Load: dur(60 * time.Second)},
	{Name: "steady-1k-2000", Kind: "steady", Groups: 1000, Partitions: 4, Rate: 2000, Load: dur(60 * time.Second), Heavy: true},
	{Name: "steady-10k-5000", Kind: "steady", Groups: 10000, Partitions: 10, Rate: 5000, Load: dur(60 * time.Second), Heavy: true},
	{Name: "first-start-1k-100p", Kind: "first-start", Groups: 1000, Partitions: 100},
	{Name: "broker-stop", Kind: "broker-stop", Groups: 1000, Partitions: 4, Rate: 500, Load: dur(90 * time.Second),
		StopAt: dur(20 * time.Second), StopFor: dur(30 * time.Second)},

	// Scale-out (see scaleout_test.go): not in the default run; "scaleout"
	// selects these.
	{Name: "scaleout-first-start-1k-100p", Kind: "first-start", Groups: 1000, Partitions: 100, Instances: 3},
	// Three times the pairs: what part of an instance's memory is its own
	// (runtime, clients) and what part grows with the pairs it owns.
	{Name: "scaleout-first-start-3k-100p", Kind: "first-start", Groups: 3000, Partitions: 100, Instances: 3},
	// Freshness with one instance and with three, as steady-100 and
	// steady-1k-500 measure it.
	{Name: "scaleout-steady-100", Kind: "steady", Groups: 100, Partitions: 4, Rate: 400, Load: dur(60 * time.Second), Instances: 3},
	{Name: "scaleout-steady-1k-500", Kind: "steady", Groups: 1000, Partitions: 4, Rate: 500, Load: dur(60 * time.Second), Instances: 3},
	// Every group commits once a second at a new translation (1 s rounds),
	// so up to 2,000 target group commits/s are due, at a rate the
	// generator reaches (the report has the achieved rate); 8 partitions
	// a group make each commit cost enough that three quarter-core
	// instances stay below that.
	{Name: "scaleout-throughput", Kind: "steady", Groups: 2000, Partitions: 8, Rate: 2000, Load: dur(60 * time.Second),
		Instances: 3, CPUQuota: 0.25, SyncEvery: dur(time.Second)},
	// 1 s rounds and a commit per group a second: a group's next target
	// commit is due within a second at any time, so a pause shows as a
	// delay. Group labels tell which instance commits which group.
	{Name: "scaleout-kill", Kind: "kill", Groups: 1000, Partitions: 4, Rate: 1000, Load: dur(60 * time.Second),
		KillAt: dur(30 * time.Second), Instances: 3, SyncEvery: dur(time.Second),
		Props: map[string]string{"checkpointd.commit.lease.session.timeout.ms": "3000", "checkpointd.metrics.group.labels": "true"}},
}

// TestScale runs the selected scenarios; each runs checkpointd, then MM2's
// checkpoint connector, on the same clusters and topic with fresh groups.
// Offset syncs come from MM2's MirrorSourceConnector (StartMM2, checkpoints
// off, offset.lag.max=0) on records the test keeps producing.
//
//	CHECKPOINTD_SCALE_BENCH=1 go test -count=1 -timeout 60m -run '^TestScale$' -v ./bench/scale/
func TestScale(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skipf("system benchmark on real Kafka (up to 25 minutes): set %s=1 to run it", benchEnv)
	}
	if testing.Short() {
		t.Fatalf("%s is set but -short skips real Kafka: drop -short", benchEnv)
	}
	selected := selectScenarios(t)
	factor := 1.0
	if v := os.Getenv(timeEnv); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			t.Fatalf("%s=%q: want a positive number", timeEnv, v)
		}
		factor = f
	}
	systems := []string{"checkpointd", "mm2"}
	if v := os.Getenv(systemsEnv); v != "" {
		systems = strings.Split(v, ",")
		for _, s := range systems {
			if s != "checkpointd" && s != "mm2" {
				t.Fatalf("%s: unknown system %q (checkpointd, mm2)", systemsEnv, s)
			}
		}
	}
	root := kafkatest.ModuleRoot(t)
	outDir := filepath.Join(root, "bench", "results")
	if v := os.Getenv(outEnv); v != "" {
		outDir = v
	}
	began := time.Now()
	var bed *kafkatest.Bed
	if slices.ContainsFunc(selected, func(sc scenario) bool { return !sc.scaleOut() }) {
		bed = kafkatest.Shared(t)
		precreateCheckpoints(t, bed)
	}
	noop := noopHandler(t)
	bin := buildCheckpointd(t, root, t.TempDir(), noop)

	run := &runResult{
		Started: began.UTC(), Kafka: kafkatest.KafkaVersion, Go: runtime.Version(), CPUs: runtime.NumCPU(),
		TimeFactor: factor, OffsetSyncs: "MM2 MirrorSourceConnector (dedicated mode, offset.lag.max=0), on records produced throughout",
		TargetTiming: "target __consumer_offsets commit records, broker commit timestamp",
		ConnectJVM:   strings.Join(kafkatest.ConnectJVMFlags, " "),
		Tree:         treeState(root),
		ExtraProps:   extraProps(t),
		NoopHandler:  noop,
	}
	for _, sc := range selected {
		if sc.Kind != "first-start" {
			sc.Load = dur(max(10*time.Second, time.Duration(float64(sc.Load)*factor)))
		}
		if sc.Kind == "broker-stop" {
			sc.StopAt = dur(max(5*time.Second, time.Duration(float64(sc.StopAt)*factor)))
			sc.Load = dur(max(time.Duration(sc.Load), time.Duration(sc.StopAt+sc.StopFor)+30*time.Second))
		}
		if sc.Kind == "kill" {
			// A spell before the kill tells who owns what; one after it
			// checks the hand-over left every group one committer.
			sc.KillAt = dur(max(15*time.Second, time.Duration(float64(sc.KillAt)*factor)))
			sc.Load = dur(max(time.Duration(sc.Load), time.Duration(sc.KillAt)+25*time.Second))
		}
		t.Run(sc.Name, func(t *testing.T) {
			var res scenarioResult
			if sc.scaleOut() {
				if !slices.Contains(systems, "checkpointd") {
					t.Skipf("a scale-out scenario runs checkpointd only, and %s leaves it out", systemsEnv)
				}
				res = runScaleOut(t, bin, sc)
			} else {
				res = runScenario(t, bed, bin, sc, systems)
			}
			run.Scenarios = append(run.Scenarios, res)
		})
	}
	run.Took = dur(time.Since(began))
	writeResults(t, outDir, run)
}

func selectScenarios(t *testing.T) []scenario {
	v := os.Getenv(scenariosEnv)
	var out []scenario
	switch v {
	case "", "default":
		for _, s := range scenarios {
			if !s.Heavy && !s.scaleOut() {
				out = append(out, s)
			}
		}
	case "all":
		out = slices.Clone(scenarios)
	case "scaleout":
		for _, s := range scenarios {
			if s.scaleOut() {
				out = append(out, s)
			}
		}
	default:
		for name := range strings.SplitSeq(v, ",") {
			i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.Name == strings.TrimSpace(name) })
			if i < 0 {
				var names []string
				for _, s := range scenarios {
					names = append(names, s.Name)
				}
				t.Fatalf("%s: unknown scenario %q; have %s", scenariosEnv, name, strings.Join(names, ", "))
			}
			out = append(out, scenarios[i])
		}
	}
	return out
}

// scenarioEnv is what both systems' phases of a scenario share.
type scenarioEnv struct {
	bed    *kafkatest.Bed
	bin    string
	sc     scenario
	topic  string
	remote string
	syncs  *syncWatch
	cm     *committer
	prod   *producer
}

func runScenario(t *testing.T, bed *kafkatest.Bed, bin string, sc scenario, systems []string) scenarioResult {
	res := scenarioResult{Scenario: sc}
	e, stop := newScenarioEnv(t, bed, bin, sc)
	defer stop()
	for _, sys := range systems {
		t.Run(sys, func(t *testing.T) {
			ph := e.runPhase(t, sys, 1)
			t.Logf("%s", ph.summary())
			res.Phases = append(res.Phases, ph)
		})
	}
	return res
}

// runScaleOut runs a scale-out scenario: checkpointd only (MM2 cannot share
// a group's work between workers like this), each instance count on fresh
// clusters. On shared ones the later phase's instances would first replay
// the earlier phases' commits from __consumer_offsets, which they read
// from its start.
func runScaleOut(t *testing.T, bin string, sc scenario) scenarioResult {
	res := scenarioResult{Scenario: sc}
	for _, n := range sc.instanceCounts() {
		t.Run(fmt.Sprintf("checkpointd-x%d", n), func(t *testing.T) {
			e, stop := newScenarioEnv(t, startScaleOutBed(t), bin, sc)
			defer stop()
			ph := e.runPhase(t, "checkpointd", n)
			t.Logf("%s", ph.summary())
			t.Logf("%s", ph.scaleOutSummary())
			res.Phases = append(res.Phases, ph)
		})
	}
	return res
}

// newScenarioEnv sets up what a scenario's phases share on bed: the topic,
// MM2's source connector writing offset syncs, the records, the committer.
// stop stops them.
func newScenarioEnv(t *testing.T, bed *kafkatest.Bed, bin string, sc scenario) (e *scenarioEnv, stop func()) {
	e = &scenarioEnv{bed: bed, bin: bin, sc: sc, topic: kafkatest.UniqueName(t, "scale")}
	e.remote = bed.RemoteTopic(e.topic)
	bed.Source.CreateTopic(t, e.topic, int32(sc.Partitions), nil)
	lagMax := int64(0)
	mm2 := bed.StartMM2(t, kafkatest.MM2Options{
		Topics: e.topic, Groups: "no-group-is-named-like-this-scale", OffsetLagMax: &lagMax,
		// Offset syncs go out at once, not held for the next flush.
		Extra: map[string]string{bed.Source.Alias + "->" + bed.Target.Alias + ".offset.flush.interval.ms": "1000"},
	})
	t.Logf("mm2 (source connector) ready in %s", mm2.ReadyIn.Round(time.Millisecond))
	e.syncs = startSyncWatch(t, bed, e.topic, sc.Partitions)
	// A broker handles one request per connection at a time, so the commit
	// rate is at most connections / commit latency: enough connections that
	// the generator is not what limits it.
	e.cm = newCommitter(t, bed.Source, 32)
	// One record per partition per round: a new offset sync per partition
	// every round; each (group, partition) is timed once per round.
	e.prod = startProducer(t, bed.Source, e.topic, sc.Partitions, sc.round())
	// A few rounds, so that the topic and its syncs have some history. MM2
	// sends at most 10 offset syncs at a time and the rest at its next offset
	// flush (1 s), so with many partitions the syncs of a round trail it by
	// seconds: each phase pauses the producer and waits for them.
	time.Sleep(3 * syncRound)
	if sc.Kind == "first-start" {
		// The state is fixed before the systems start.
		e.prod.stop()
	}
	return e, func() {
		e.prod.stop()
		e.syncs.stop()
		if err := mm2.Stop(); err != nil {
			t.Errorf("stop mm2: %v", err)
		}
	}
}

// runPhase runs one system through the scenario and measures it; n is how
// many checkpointd instances share the work (1 for MM2).
func (e *scenarioEnv) runPhase(t *testing.T, sys string, n int) phaseResult {
	bed, sc := e.bed, e.sc
	ph := phaseResult{System: sys}
	if sc.scaleOut() {
		ph.Instances = n
	}
	prefix := kafkatest.UniqueName(t, "g")
	groups := groupNames(prefix, sc.Groups)
	tr := newTracker(groups, sc.Partitions, e.remote)
	stopWatch := watchTarget(t, bed.Target, tr)
	last := make([][]int64, len(groups)) // per group: the last registered want per partition
	for i := range last {
		last[i] = slices.Repeat([]int64{-1}, sc.Partitions)
	}

	// The syncs stand still until the initial sync is done: the system reads
	// them at its start, when MM2's store keeps only the newest.
	e.prod.pause()
	e.syncs.waitAll(t, bed.Source, e.topic, 90*time.Second)
	// Every group commits before the system starts: MM2's connector works
	// only on groups it listed, and a later group restarts its task. These
	// commits are timed too, from the system's start: the initial sync.
	initStart := time.Now()
	initTracker := tr
	parallelGroups(len(groups), 16, func(g int) {
		offs, ws := make([]int64, sc.Partitions), make([]int64, sc.Partitions)
		e.syncs.next(offs, ws)
		if err := e.cm.commit(groups[g], e.topic, offs); err != nil {
			t.Errorf("initial commit of %s: %v", groups[g], err)
			return
		}
		initTracker.add(g, ws, last[g], time.Time{}) // timed from the start below
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d initial commits (%d partitions each) in %s", len(groups), sc.Partitions, time.Since(initStart).Round(time.Millisecond))

	cpBefore := checkpointsEnd(t, bed)
	var brokerPid atomic.Int64
	brokerPid.Store(int64(bed.Target.Pid()))
	startAt := time.Now()
	tr.setStart(startAt)
	var pids []int
	var cs []*cpd // checkpointd's instances
	var conn *kafkatest.MM2
	var stopProbe func() (int, time.Duration, int)
	var kr killRun
	var steadyCommitsPerSec float64
	switch sys {
	case "checkpointd":
		props := map[string]string{
			"source.cluster.alias":                 bed.Source.Alias,
			"target.cluster.alias":                 bed.Target.Alias,
			"source.cluster.bootstrap.servers":     bed.Source.Bootstrap,
			"target.cluster.bootstrap.servers":     bed.Target.Bootstrap,
			"groups":                               regexFor(prefix),
			"emit.checkpoints.interval.seconds":    "1",
			"sync.group.offsets.enabled":           "true",
			"sync.group.offsets.interval.seconds":  "1",
			"checkpoints.topic.replication.factor": "1",
			"checkpointd.group.id":                 prefix + "-checkpointd",
			"checkpointd.commit.source":            "offsets-log",
			"checkpointd.metrics.group.labels":     "false",
			"checkpointd.log.level":                "warn",
		}
		maps.Copy(props, sc.Props)
		// Started back to back, so that they join the group together.
		for range n {
			c := startCheckpointd(t, e.bin, t.TempDir(), maps.Clone(props), extraProps(t))
			if sc.CPUQuota > 0 {
				if err := capCPU(t, c, sc.CPUQuota); err != nil {
					t.Fatalf("cap checkpointd's CPU at %.2f cores: %v", sc.CPUQuota, err)
				}
			}
			cs = append(cs, c)
			pids = append(pids, c.pid())
		}
		if n == 1 {
			stopProbe = cs[0].probeReadyz()
		}
		for _, c := range cs {
			if err := c.waitReady(3 * time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	case "mm2":
		conn = bed.StartCheckpointConnector(t, kafkatest.CheckpointConnectorOptions{
			Groups: regexFor(prefix), CheckpointInterval: time.Second, SyncGroupOffsetsInterval: time.Second,
		})
		pids = []int{conn.Pid()}
	}
	pid := pids[0]
	ph.ReadyAfter = dur(time.Since(startAt))
	t.Logf("%s ready in %s", sys, ph.ReadyAfter)

	scraped := cs
	if sc.Props["checkpointd.metrics.group.labels"] == "true" {
		// Per-(group, partition) histograms make a scrape tens of MB: the
		// sampler's every 5 s would weigh on what is measured.
		scraped = nil
	}
	s := startSampler(startAt, pids, func() int { return int(brokerPid.Load()) }, tr, scraped)
	// The initial sync: every (group, partition) reached on the target.
	bound := 3 * time.Minute
	for tr.backlog() > 0 && time.Since(startAt) < bound {
		for _, c := range cs {
			if c.exited() {
				t.Fatalf("checkpointd exited:\n%s", c.logTail(30))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	ph.InitialSynced = dur(time.Since(startAt))
	ph.InitialPairs = sc.Groups * sc.Partitions
	ph.InitialMissing = tr.backlog()
	if ph.InitialMissing > 0 {
		ph.InitialSynced = -1
	}
	t.Logf("%s: initial %d pairs synced after %s (%d missing)", sys, ph.InitialPairs, ph.InitialSynced, ph.InitialMissing)
	if sc.Kind != "first-start" {
		tr.resetMeasured() // else the delays are the initial sync's, from the start
	}

	if sc.Kind != "first-start" {
		e.prod.resume()
	}
	startupCPU := make([]float64, len(pids))
	for i, p := range pids {
		startupCPU[i], _ = cpuSeconds(p)
		ph.StartupCPUSeconds += startupCPU[i]
	}
	cpuSys, cpuBroker := newCPUMeter(pids...), newCPUMeter(int(brokerPid.Load()))
	cpuEach := make([]*cpuMeter, len(pids))
	for i, p := range pids {
		cpuEach[i] = newCPUMeter(p)
	}
	loadStart := time.Now()
	ph.LoadStartAt = dur(loadStart.Sub(startAt))
	readCPU := func() {
		for i, p := range pids {
			cpuSys.read(p)
			cpuEach[i].read(p)
		}
		cpuBroker.read(int(brokerPid.Load()))
	}
	// The steady rate of target group commits: from a quarter into the
	// load, past the start's catching up, to its end.
	type mark struct {
		requests int64
		at       time.Time
	}
	warm := make(chan mark, 1)
	warmTimer := time.AfterFunc(time.Duration(sc.Load)/4, func() {
		_, req := tr.counts()
		warm <- mark{req, time.Now()}
	})
	defer warmTimer.Stop()
	if sc.Kind != "first-start" {
		var stopped chan error
		if sc.Kind == "broker-stop" {
			stopped = make(chan error, 1)
			go func() {
				time.Sleep(time.Duration(sc.StopAt))
				readCPU()
				s.event("target broker: stop requested (SIGTERM)")
				if err := bed.Target.StopBroker(); err != nil {
					stopped <- err
					return
				}
				s.event("target broker: stopped")
				time.Sleep(time.Duration(sc.StopFor))
				s.event("target broker: restart")
				err := bed.Target.RestartBroker(context.Background())
				brokerPid.Store(int64(bed.Target.Pid()))
				s.event(restartedEvent)
				stopped <- err
			}()
		}
		var killed chan killRun
		if sc.Kind == "kill" {
			killed = make(chan killRun, 1)
			go func() {
				killed <- e.killOne(cs, groups, s, loadStart, func(victim int) {
					cpuSys.read(pids[victim])
					cpuEach[victim].read(pids[victim])
				})
			}()
		}
		ph.Load = e.generate(t, groups, last, tr, loadStart)
		if stopped != nil {
			if err := <-stopped; err != nil {
				t.Fatalf("broker stop/restart: %v", err)
			}
		}
		if killed != nil {
			kr = <-killed
			if kr.err != nil {
				t.Fatalf("kill an instance: %v", kr.err)
			}
		}
		select {
		case w := <-warm:
			_, req := tr.counts()
			steadyCommitsPerSec = float64(req-w.requests) / time.Since(w.at).Seconds()
		default:
		}
	}
	loadEnd := time.Now()
	// Drain: up to 60 s (MM2's 1 s timers and a restarted broker need some).
	for tr.backlog() > 0 && time.Since(loadEnd) < 60*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last target records
	ph.Drain = dur(time.Since(loadEnd))
	readCPU()
	samples := s.stop()
	stopWatch()
	ph.Samples = samples
	ph.Events = s.events
	if sc.Kind == "broker-stop" {
		ph.RecoveredAfter = recovery(samples, s.events)
	}
	ph.CPUSeconds = cpuSys.used()
	ph.BrokerCPUSeconds = cpuBroker.used()
	ph.Window = dur(time.Since(loadStart))
	ph.PeakRSSMB = statusKB(pid, "VmHWM") / 1024
	ph.Threads = int(statusKB(pid, "Threads"))
	if sc.scaleOut() {
		ph.ScaleOut = e.scaleOutResult(t, cs, groups, tr, startupCPU, cpuEach, samples,
			(time.Duration(ph.LoadStartAt) + time.Duration(sc.Load)/4).Seconds(), (time.Duration(ph.LoadStartAt) + time.Duration(sc.Load)).Seconds(),
			kr, steadyCommitsPerSec)
		ph.PeakRSSMB = 0
		for _, in := range ph.ScaleOut.Instances {
			ph.PeakRSSMB = max(ph.PeakRSSMB, in.PeakRSSMB)
		}
	}
	for _, sm := range samples {
		ph.MaxRSSMB = max(ph.MaxRSSMB, sm.RSSMB)
		ph.MaxLoadAvg = max(ph.MaxLoadAvg, sm.LoadAvg1)
		if sm.ReaderLag >= 0 {
			ph.MaxReaderLag = max(ph.MaxReaderLag, sm.ReaderLag)
		}
	}
	ph.CheckpointRecords = checkpointsEnd(t, bed) - cpBefore
	ph.TargetRecords, ph.TargetRequests = tr.counts()
	ph.delayStats(tr)
	if commits := ph.Load.Commits + int64(sc.Groups); commits > 0 {
		ph.CheckpointsPerCommit = float64(ph.CheckpointRecords) / float64(commits)
	}
	if ph.Load.Commits > 0 {
		ph.CPUPer1kCommits = ph.CPUSeconds / float64(ph.Load.Commits) * 1000
	}
	ph.TargetCommitsPerSec = float64(ph.TargetRequests) / ph.Window.Seconds()
	ph.Lowered = tr.lowered
	if sc.scaleOut() && ph.Lowered > 0 {
		t.Errorf("%d target group offsets were lowered", ph.Lowered)
	}
	if cs != nil {
		if stopProbe != nil {
			var slowest time.Duration
			ph.ReadyzProbes, slowest, ph.ReadyzSlow = stopProbe()
			ph.ReadyzMaxMS = int(slowest.Milliseconds())
		}
		for i, c := range cs {
			if sc, err := c.scrape(5 * time.Second); err == nil {
				ph.EventsDropped += int64(sc.EventsDropped)
			}
			c.saveMetrics()
			for _, l := range problems(c.logTail(400)) {
				if len(cs) > 1 {
					l = instanceName(i) + ": " + l
				}
				ph.LogTail = append(ph.LogTail, l)
			}
			c.stop()
		}
	} else {
		ph.LogTail = problems(conn.LogTail(1 << 20))
		if err := conn.Stop(); err != nil {
			t.Errorf("stop connect: %v", err)
		}
	}
	return ph
}

// generate commits at sc.Rate for sc.Load, round-robin over the groups, each
// request covering every partition at the newest translatable offset. A group
// always goes to the same worker, so its commits stay in order. When the
// workers cannot keep up the schedule slips: the achieved rate is reported.
func (e *scenarioEnv) generate(t *testing.T, groups []string, last [][]int64, tr *tracker, start time.Time) loadResult {
	sc := e.sc
	const workers = 128
	type job struct{ g int }
	chans := make([]chan job, workers)
	var res loadResult
	type counts struct{ commits, measured, failed int64 }
	per := make([]counts, workers)
	done := make(chan struct{})
	for w := range workers {
		chans[w] = make(chan job, 32)
		go func() {
			defer func() { done <- struct{}{} }()
			offs, ws := make([]int64, sc.Partitions), make([]int64, sc.Partitions)
			for j := range chans[w] {
				e.syncs.next(offs, ws)
				at := time.Now()
				n := tr.add(j.g, ws, last[j.g], at)
				if err := e.cm.commit(groups[j.g], e.topic, offs); err != nil {
					tr.forget(j.g, ws)
					per[w].failed++
					continue
				}
				per[w].commits++
				per[w].measured += int64(n)
			}
		}()
	}
	interval := time.Duration(float64(time.Second) / sc.Rate)
	end := start.Add(time.Duration(sc.Load))
	var sent int64
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.After(end) {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if time.Now().After(end) {
			break
		}
		g := i % len(groups)
		chans[g%workers] <- job{g}
		sent++
	}
	for _, ch := range chans {
		close(ch)
	}
	for range workers {
		<-done
	}
	took := time.Since(start)
	for _, c := range per {
		res.Commits += c.commits
		res.Measured += c.measured
		res.Failed += c.failed
	}
	res.Asked = sc.Rate
	res.Achieved = float64(res.Commits) / took.Seconds()
	res.Took = dur(took)
	t.Logf("load: %d commits (%d failed) in %s: %.0f/s of %.0f/s asked; %d (commit, partition) timed",
		res.Commits, res.Failed, took.Round(time.Millisecond), res.Achieved, sc.Rate, res.Measured)
	return res
}

func parallelGroups(n, workers int, fn func(i int)) {
	ch := make(chan int)
	done := make(chan struct{})
	for range workers {
		go func() {
			for i := range ch {
				fn(i)
			}
			done <- struct{}{}
		}()
	}
	for i := range n {
		ch <- i
	}
	close(ch)
	for range workers {
		<-done
	}
}

// checkpointsEnd is the end offset of <source>.checkpoints.internal on the
// target: its difference over a phase is the checkpoint records written.
func checkpointsEnd(t *testing.T, bed *kafkatest.Bed) int64 {
	t.Helper()
	client := bed.Target.Client(t)
	off, err := client.GetOffset(bed.CheckpointsTopic(), 0, sarama.OffsetNewest)
	if err != nil {
		t.Fatalf("end of %s: %v", bed.CheckpointsTopic(), err)
	}
	_ = client.Close()
	return off
}

func precreateCheckpoints(t *testing.T, bed *kafkatest.Bed) {
	t.Helper()
	bed.Target.EnsureTopic(t, bed.CheckpointsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
}

// problems keeps the warning and error lines of a log, at most 10.
func problems(log string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, " ERROR ") || strings.Contains(line, " WARN ") ||
			strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
			out = append(out, strings.TrimSpace(line))
			if len(out) == 10 {
				break
			}
		}
	}
	return out
}

// treeState names the commit checkpointd was built from, and says when the
// working tree had changes to Go files on top of it.
func treeState(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	state := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--", "*.go").Output(); err == nil && len(st) > 0 {
		state += " with uncommitted changes to Go files"
	}
	return state
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// quantile is the nearest-rank q-quantile of sorted values; NaN for none.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// dur is a time.Duration that reads as text in JSON and reports.
type dur time.Duration

func (d dur) String() string {
	if d < 0 {
		return "-"
	}
	return time.Duration(d).Round(time.Millisecond).String()
}
func (d dur) Seconds() float64             { return time.Duration(d).Seconds() }
func (d dur) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
func (d *dur) UnmarshalText(b []byte) error {
	if string(b) == "-" {
		*d = -1
		return nil
	}
	v, err := time.ParseDuration(string(b))
	*d = dur(v)
	return err
}

var _ = fmt.Sprintf

// extraProps are the checkpointd properties CHECKPOINTD_SCALE_PROPS adds
// or overrides, for trying a setting without editing the harness.
func extraProps(t *testing.T) map[string]string {
	props := map[string]string{}
	for _, kv := range strings.Split(os.Getenv(extraEnv), ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("%s: %q is not key=value", extraEnv, kv)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props
}

// noopHandler reads noopEnv: whether checkpointd runs with no-op typed
// handlers (bench/scale/cmd/noophandler).
func noopHandler(t *testing.T) bool {
	v := os.Getenv(noopEnv)
	if v == "" {
		return false
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		t.Fatalf("%s=%q: want 1 or 0", noopEnv, v)
	}
	return on
}
