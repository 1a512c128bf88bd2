//go:build linux

package scale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

// The scale-out scenarios run N `checkpointd run` processes with one
// checkpointd.group.id: they share the source's __consumer_offsets
// partitions, so each translates, keeps state for and commits the groups
// of its partitions only. Each phase runs on clusters of its own (see
// runScaleOut) whose brokers have Kafka's stock 50 __consumer_offsets
// partitions: the tests' 4 would split among three instances 2/1/1, so no
// even shares could show.

const (
	scaleOutOffsetsPartitions = "50"
	cgroupEnv                 = "CHECKPOINTD_SCALE_CGROUP" // cgroup v1 cpu controller mount; default below
	defaultCgroupCPU          = "/sys/fs/cgroup/cpu"
	defaultSessionTimeout     = 6 * time.Second // checkpointd.commit.lease.session.timeout.ms's default
)

// startScaleOutBed starts clusters for one scale-out phase, closed when
// the phase's test ends (after its checkpointd instances, stopped by
// cleanups registered later).
func startScaleOutBed(t *testing.T) *kafkatest.Bed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bed, err := kafkatest.StartBed(ctx, kafkatest.BedOptions{
		ServerProps: map[string]string{"offsets.topic.num.partitions": scaleOutOffsetsPartitions},
	})
	if err != nil {
		t.Fatalf("scale-out clusters: %v", err)
	}
	t.Cleanup(func() {
		if err := bed.Close(); err != nil {
			t.Errorf("close the scale-out clusters: %v", err)
		}
	})
	t.Logf("scale-out clusters (%s __consumer_offsets partitions) ready in %s", scaleOutOffsetsPartitions, bed.ReadyIn.Round(time.Millisecond))
	precreateCheckpoints(t, bed)
	return bed
}

func instanceName(i int) string { return fmt.Sprintf("cpd%d", i) }

// capCPU moves c's process into a cgroup v1 CPU group of its own whose CFS
// quota lets it run cores of a CPU per period. Uncapped, one instance could
// use the whole machine and more instances could not add capacity; capped
// alike, N instances have N times one's CPU (a quota caps, it does not
// reserve: on a busy machine an instance may get less). The group is
// removed when the test ends, after the process is stopped (a group with a
// task cannot be removed).
func capCPU(t *testing.T, c *cpd, cores float64) error {
	root := cmp.Or(os.Getenv(cgroupEnv), defaultCgroupCPU)
	dir := filepath.Join(root, kafkatest.UniqueName(t, "checkpointd-bench"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("create a CPU cgroup (cgroup v1 cpu controller mounted at %s, writable: root; %s names another mount): %w",
			root, cgroupEnv, err)
	}
	t.Cleanup(func() {
		c.stop()
		if err := removeCgroup(dir); err != nil {
			t.Errorf("remove CPU cgroup: %v", err)
		}
	})
	const period = 100_000 // µs
	for _, w := range []struct{ file, value string }{
		{"cpu.cfs_period_us", strconv.Itoa(period)},
		{"cpu.cfs_quota_us", strconv.Itoa(int(cores * period))},
		{"cgroup.procs", strconv.Itoa(c.pid())},
	} {
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.value), 0o644); err != nil {
			return fmt.Errorf("set %s of the CPU cgroup to %s: %w", w.file, w.value, err)
		}
	}
	return nil
}

// removeCgroup removes an emptied cgroup; the kernel may take a moment to
// let go of an exited task.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// ---- results ----------------------------------------------------------------------

// scaleOutResult is what a scale-out phase measures beyond a phase.
type scaleOutResult struct {
	CPUQuota  float64          `json:"cpu_quota,omitempty"`
	Instances []instanceResult `json:"instances"`
	// GroupLabels: the instances counted committed target partitions per
	// group (checkpointd.metrics.group.labels), so each group's committers
	// are known. Without, an instance's groups are its committed
	// partitions / the partitions per group: exact at a first start, where
	// every pair is committed once (checked).
	GroupLabels bool `json:"group_labels"`
	// SharedGroups: groups that more than one instance committed (with
	// group labels; a correctness failure).
	SharedGroups int `json:"groups_committed_by_two,omitempty"`
	// SteadyCommitsPerSec: target group commits (OffsetCommit requests)
	// per second, from a quarter into the load to its end.
	SteadyCommitsPerSec float64     `json:"steady_target_commits_per_s,omitempty"`
	Kill                *killResult `json:"kill,omitempty"`
}

type instanceResult struct {
	Name       string  `json:"name"`
	PeakRSSMB  int64   `json:"peak_rss_mb"` // VmHWM at the phase end (at the kill for a killed one)
	MaxRSSMB   int64   `json:"max_rss_mb"`  // of the 1 s samples
	CPUSeconds float64 `json:"cpu_s"`       // the load and drain window
	// StartupCPUSeconds: from the process start through the initial sync.
	StartupCPUSeconds float64 `json:"startup_cpu_s"`
	// SteadyCPU: mean CPU (cores) of the samples from a quarter into the
	// load to its end, the steady commit rate's window: at the cap, the
	// instance's CPU is what bounds it.
	SteadyCPU float64 `json:"steady_cpu_cores,omitempty"`
	// CommittedPartitions: checkpointd_target_commits_total{reason=
	// "committed"} at the end (before the kill for a killed one).
	CommittedPartitions float64 `json:"committed_partitions"`
	Groups              int     `json:"groups"` // -1: unknown (no group labels, and groups committed many times)
	Share               float64 `json:"share"`  // of the committed target partitions of all instances
	Killed              bool    `json:"killed,omitempty"`
}

// killResult is the scaleout-kill phase's: one instance SIGKILLed under
// load and not restarted.
type killResult struct {
	Instance       string `json:"instance"`
	At             dur    `json:"at"` // since the system's start, in the samples' time
	SessionTimeout dur    `json:"session_timeout"`
	// Owners come from the instances' commits in a spell before the kill:
	// the killed instance's groups, the others', and groups no instance
	// committed in the spell (left out of both measures).
	Groups      int `json:"groups"`
	OtherGroups int `json:"other_groups"`
	Unowned     int `json:"unowned"`
	// OthersMaxDelay: the longest source commit -> target delay of the
	// other instances' groups' commits sent from 2 s before the kill to
	// the spell after it: their longest pause (each group commits every
	// second). Before: the same over the load before the kill.
	OthersMaxDelayMS       float64 `json:"others_max_delay_ms"`
	OthersMaxDelayBeforeMS float64 `json:"others_max_delay_before_ms"`
	// Resumed: from the kill until every killed group had a source commit
	// made after the kill on the target; ResumeWait of that, the longest
	// wait for that commit to be made. NotResumed: killed groups with no
	// such commit on the target by the phase end.
	Resumed    dur `json:"resumed_after"`
	ResumeWait dur `json:"resume_wait"`
	NotResumed int `json:"not_resumed"`
	// HandedOver: from the kill until the target had the first post-kill
	// commit of every killed group that made one within the session
	// timeout of the kill (HandedOverGroups of them). Those commits had to
	// wait for the hand-over, so this times the hand-over itself, not the
	// load's commit schedule, which Resumed also holds.
	HandedOver       dur `json:"handed_over_after"`
	HandedOverGroups int `json:"handed_over_groups"`
	// After the hand-over, a spell to the load's end: groups committed by
	// two survivors (a correctness failure) and by none.
	SharedAfter  int `json:"groups_committed_by_two_after"`
	UnownedAfter int `json:"unowned_after"`
}

// scaleOutResult gathers the per-instance numbers at a phase's end and
// fails the test on a correctness problem: a group committed by two
// instances, or at a first start a pair committed twice.
func (e *scenarioEnv) scaleOutResult(t *testing.T, cs []*cpd, groups []string, tr *tracker, startupCPU []float64, cpuEach []*cpuMeter,
	samples []sample, steadyFrom, steadyTo float64, kr killRun, steady float64) *scaleOutResult {
	t.Helper()
	sc := e.sc
	res := &scaleOutResult{CPUQuota: sc.CPUQuota, GroupLabels: sc.Props["checkpointd.metrics.group.labels"] == "true",
		SteadyCommitsPerSec: steady}
	counts := make([]map[string]float64, len(cs))
	for i, c := range cs {
		in := instanceResult{Name: instanceName(i), StartupCPUSeconds: startupCPU[i], CPUSeconds: cpuEach[i].used()}
		if i == kr.victim && kr.err == nil && !kr.at.IsZero() {
			in.Killed, in.PeakRSSMB, counts[i] = true, kr.victimPeakRSSMB, kr.victimCommitted
		} else {
			in.PeakRSSMB = statusKB(c.pid(), "VmHWM") / 1024 // before the scrape: it allocates
			sc, err := c.scrape(30 * time.Second)
			if err != nil {
				t.Errorf("%s: %v", in.Name, err)
			}
			counts[i] = sc.Committed
		}
		var steadyCPU float64
		var steadySamples int
		for _, sm := range samples {
			rss, cpu := sm.RSSMB, sm.CPU
			if i < len(sm.InstanceRSSMB) {
				rss, cpu = sm.InstanceRSSMB[i], sm.InstanceCPU[i]
			} else if len(cs) > 1 {
				continue
			}
			in.MaxRSSMB = max(in.MaxRSSMB, rss)
			if sm.T >= steadyFrom && sm.T <= steadyTo && !(in.Killed && sm.T >= kr.at.Sub(kr.start).Seconds()) {
				steadyCPU += cpu
				steadySamples++
			}
		}
		if steadySamples > 0 && steadyTo > steadyFrom {
			in.SteadyCPU = steadyCPU / float64(steadySamples)
		}
		for _, v := range counts[i] {
			in.CommittedPartitions += v
		}
		res.Instances = append(res.Instances, in)
	}
	var total float64
	for _, in := range res.Instances {
		total += in.CommittedPartitions
	}
	for i := range res.Instances {
		in := &res.Instances[i]
		if total > 0 {
			in.Share = in.CommittedPartitions / total
		}
		switch {
		case res.GroupLabels:
		case sc.Kind == "first-start":
			in.Groups = int(in.CommittedPartitions) / sc.Partitions
		default:
			in.Groups = -1 // a group is committed many times: unknown
		}
	}
	if res.GroupLabels {
		for _, g := range groups {
			var by []int
			for i, m := range counts {
				if m[g] > 0 {
					by = append(by, i)
				}
			}
			for _, i := range by {
				res.Instances[i].Groups++
			}
			// Over the whole phase a group moves with its shard when an
			// instance dies: the spells around the kill check that case.
			if len(by) > 1 && sc.Kind != "kill" {
				res.SharedGroups++
			}
		}
		if res.SharedGroups > 0 {
			t.Errorf("%d groups were committed by more than one instance", res.SharedGroups)
		}
	}
	if sc.Kind == "first-start" {
		// Nothing moves after the first start's commits: every pair is
		// committed once, by its group's owner.
		pairs := float64(sc.Groups * sc.Partitions)
		if total > pairs {
			t.Errorf("the instances committed %.0f target partitions for %.0f pairs: some pair was committed twice", total, pairs)
		}
	}
	if sc.Kind == "kill" && kr.err == nil {
		res.Kill = analyseKill(kr, tr.reachedPairs(), sessionTimeout(sc))
		if res.Kill.SharedAfter > 0 {
			t.Errorf("after the hand-over %d groups were committed by two instances in one spell", res.Kill.SharedAfter)
		}
	}
	return res
}

func sessionTimeout(sc scenario) time.Duration {
	if v, err := strconv.Atoi(sc.Props["checkpointd.commit.lease.session.timeout.ms"]); err == nil {
		return time.Duration(v) * time.Millisecond
	}
	return defaultSessionTimeout
}

// ---- scaleout-kill ------------------------------------------------------------------

// killRun is what killOne did, for analyseKill.
type killRun struct {
	err             error
	victim          int
	start, at       time.Time // the system's start; the kill
	loadStart       time.Time
	spellAfter      time.Time // the first scrape after the kill
	owner           []int     // per group: the instance that committed it in the spell before the kill; -1 none
	sharedBefore    int
	sharedAfter     int
	unownedAfter    int
	victimPeakRSSMB int64
	victimCommitted map[string]float64
}

// killOne runs beside the load: it finds who commits which group in a
// spell before sc.KillAt (scraping 2 s before, so that the scrapes, tens
// of MB with group labels, are done by the kill), SIGKILLs the instance
// with the most groups, and after the hand-over checks in a second spell
// that every group has one committer.
func (e *scenarioEnv) killOne(cs []*cpd, groups []string, s *sampler, loadStart time.Time, beforeKill func(victim int)) killRun {
	sc := e.sc
	kr := killRun{start: s.start, loadStart: loadStart, victim: -1}
	killAt := loadStart.Add(time.Duration(sc.KillAt))
	spell := min(8*time.Second, time.Duration(sc.KillAt)/2)
	all := make([]int, len(cs))
	for i := range all {
		all[i] = i
	}
	time.Sleep(time.Until(killAt.Add(-2*time.Second - spell)))
	before, err := scrapeCommitted(cs, all)
	if err != nil {
		kr.err = err
		return kr
	}
	time.Sleep(time.Until(killAt.Add(-2 * time.Second)))
	after, err := scrapeCommitted(cs, all)
	if err != nil {
		kr.err = err
		return kr
	}
	owners := committersOf(groups, before, after)
	kr.owner = make([]int, len(groups))
	perInstance := make([]int, len(cs))
	for g, by := range owners {
		kr.owner[g] = -1
		switch len(by) {
		case 0:
		case 1:
			kr.owner[g] = by[0]
			perInstance[by[0]]++
		default:
			kr.sharedBefore++
		}
	}
	if kr.sharedBefore > 0 {
		kr.err = fmt.Errorf("%d groups were committed by two instances in the spell before the kill", kr.sharedBefore)
		return kr
	}
	kr.victim = 0
	for i, n := range perInstance {
		if n > perInstance[kr.victim] {
			kr.victim = i
		}
	}
	v := cs[kr.victim]
	kr.victimCommitted = after[kr.victim]
	time.Sleep(time.Until(killAt))
	kr.victimPeakRSSMB = statusKB(v.pid(), "VmHWM") / 1024
	beforeKill(kr.victim)
	if err := syscall.Kill(v.pid(), syscall.SIGKILL); err != nil {
		kr.err = fmt.Errorf("SIGKILL %s: %w", instanceName(kr.victim), err)
		return kr
	}
	kr.at = time.Now()
	// The wall clock, to find the kill in the instances' logs.
	s.event(fmt.Sprintf("%s killed (SIGKILL) at %s UTC, %d of %d groups", instanceName(kr.victim),
		kr.at.UTC().Format("15:04:05.000"), perInstance[kr.victim], len(groups)))
	select {
	case <-v.done:
	case <-time.After(10 * time.Second):
		kr.err = fmt.Errorf("%s still running 10 s after SIGKILL", instanceName(kr.victim))
		return kr
	}

	// After the hand-over (session timeout, rejoin, restore; the load lasts
	// at least 25 s past the kill): a spell over the load's last 9 s among
	// the survivors. Not earlier: a scrape with group labels costs an
	// instance CPU that a slow hand-over would pay for.
	var survivors []int
	for i := range cs {
		if i != kr.victim {
			survivors = append(survivors, i)
		}
	}
	kr.spellAfter = loadStart.Add(time.Duration(sc.Load) - 10*time.Second)
	time.Sleep(time.Until(kr.spellAfter))
	before, err = scrapeCommitted(cs, survivors)
	if err != nil {
		kr.err = err
		return kr
	}
	time.Sleep(time.Until(loadStart.Add(time.Duration(sc.Load) - time.Second)))
	after, err = scrapeCommitted(cs, survivors)
	if err != nil {
		kr.err = err
		return kr
	}
	for _, by := range committersOf(groups, before, after) {
		switch {
		case len(by) == 0:
			kr.unownedAfter++
		case len(by) > 1:
			kr.sharedAfter++
		}
	}
	return kr
}

// scrapeCommitted reads the committed target partitions per group of the
// instances which (nil maps for the others), all at once.
func scrapeCommitted(cs []*cpd, which []int) ([]map[string]float64, error) {
	out := make([]map[string]float64, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for _, i := range which {
		wg.Go(func() {
			sc, err := cs[i].scrape(30 * time.Second)
			out[i] = sc.Committed
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", instanceName(i), err)
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// committersOf is, per group, the instances whose count of the group's
// committed target partitions grew from before to after.
func committersOf(groups []string, before, after []map[string]float64) [][]int {
	out := make([][]int, len(groups))
	for g, name := range groups {
		for i := range after {
			if after[i] != nil && after[i][name] > before[i][name] {
				out[g] = append(out[g], i)
			}
		}
	}
	return out
}

// analyseKill works out the pauses from the timed pairs that reached the
// target (tracker) and the owners killOne found.
func analyseKill(kr killRun, pairs []reachedPair, session time.Duration) *killResult {
	res := &killResult{Instance: instanceName(kr.victim), At: dur(kr.at.Sub(kr.start)), SessionTimeout: dur(session),
		SharedAfter: kr.sharedAfter, UnownedAfter: kr.unownedAfter}
	first := map[int]reachedPair{} // per killed group: its first pair sent after the kill to reach the target
	for _, p := range pairs {
		delay := float64(p.reached.Sub(p.sent).Microseconds()) / 1000
		switch owner := kr.owner[p.group]; {
		case owner < 0:
		case owner == kr.victim:
			if p.sent.Before(kr.at) {
				continue
			}
			if f, ok := first[p.group]; !ok || p.reached.Before(f.reached) {
				first[p.group] = p
			}
		case !p.sent.Before(kr.at.Add(-2 * time.Second)):
			if p.sent.Before(kr.spellAfter) {
				res.OthersMaxDelayMS = max(res.OthersMaxDelayMS, delay)
			}
		case p.sent.After(kr.loadStart):
			res.OthersMaxDelayBeforeMS = max(res.OthersMaxDelayBeforeMS, delay)
		}
	}
	for g, owner := range kr.owner {
		switch owner {
		case -1:
			res.Unowned++
			continue
		case kr.victim:
			res.Groups++
		default:
			res.OtherGroups++
			continue
		}
		f, ok := first[g]
		if !ok {
			res.NotResumed++
			continue
		}
		res.Resumed = max(res.Resumed, dur(f.reached.Sub(kr.at)))
		res.ResumeWait = max(res.ResumeWait, dur(max(0, f.sent.Sub(kr.at))))
		if f.sent.Sub(kr.at) <= session {
			res.HandedOver = max(res.HandedOver, dur(f.reached.Sub(kr.at)))
			res.HandedOverGroups++
		}
	}
	if res.NotResumed > 0 {
		res.Resumed = -1
	}
	return res
}

// ---- report -------------------------------------------------------------------------

// label names a phase in tables and plots: the system, and for scale-out
// phases how many instances ran.
func (ph phaseResult) label() string {
	if ph.Instances > 0 {
		return fmt.Sprintf("%s x%d", ph.System, ph.Instances)
	}
	return ph.System
}

func (ph phaseResult) scaleOutSummary() string {
	so := ph.ScaleOut
	if so == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", ph.label())
	if so.CPUQuota > 0 {
		fmt.Fprintf(&b, " each instance capped at %.2f cores;", so.CPUQuota)
	}
	if so.SteadyCommitsPerSec > 0 {
		fmt.Fprintf(&b, " steady target group commits %.0f/s;", so.SteadyCommitsPerSec)
	}
	for _, in := range so.Instances {
		steady := ""
		if in.SteadyCPU > 0 {
			steady = fmt.Sprintf(" (%.2f cores in the steady window)", in.SteadyCPU)
		}
		fmt.Fprintf(&b, " %s peak RSS %d MB, CPU %.1f s to the initial sync and %.1f s after%s, %.0f partitions committed (%.0f %%, %s groups)",
			in.Name, in.PeakRSSMB, in.StartupCPUSeconds, in.CPUSeconds, steady, in.CommittedPartitions, in.Share*100, groupCount(in.Groups))
		if in.Killed {
			b.WriteString(" [killed]")
		}
		b.WriteString(";")
	}
	if k := so.Kill; k != nil {
		fmt.Fprintf(&b, " kill of %s at %s (%d groups; %d others, %d unowned): its groups' commits made after the kill on the target %s after it "+
			"(of which waiting for the commit %s; %d not resumed), those made within the session %s after it; others' longest delay %s after vs %s before; "+
			"after the hand-over %d groups committed by two, %d by none",
			k.Instance, k.At, k.Groups, k.OtherGroups, k.Unowned, k.Resumed, k.ResumeWait, k.NotResumed, k.HandedOver,
			msf(k.OthersMaxDelayMS), msf(k.OthersMaxDelayBeforeMS), k.SharedAfter, k.UnownedAfter)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// writeScaleOut writes a scale-out scenario's per-instance table and how
// the scaled phase compares with the single instance.
func writeScaleOut(md *strings.Builder, sr scenarioResult) {
	fmt.Fprintf(md, "| phase | instance | peak RSS MB | max sampled RSS MB | CPU s start+initial sync | CPU s load+drain | CPU cores, steady window | committed partitions | groups | share |\n")
	fmt.Fprintf(md, "|---|---|---|---|---|---|---|---|---|---|\n")
	var one, many *phaseResult
	for i := range sr.Phases {
		ph := &sr.Phases[i]
		if ph.ScaleOut == nil {
			continue
		}
		if ph.Instances == 1 {
			one = ph
		} else {
			many = ph
		}
		for _, in := range ph.ScaleOut.Instances {
			name := in.Name
			if in.Killed {
				name += " (killed)"
			}
			fmt.Fprintf(md, "| %s | %s | %d | %d | %.1f | %.1f | %.2f | %.0f | %s | %.0f %% |\n",
				ph.label(), name, in.PeakRSSMB, in.MaxRSSMB, in.StartupCPUSeconds, in.CPUSeconds, in.SteadyCPU, in.CommittedPartitions, groupCount(in.Groups), in.Share*100)
		}
	}
	fmt.Fprintf(md, "\n")
	for _, ph := range []*phaseResult{one, many} {
		if ph != nil && ph.ScaleOut.SteadyCommitsPerSec > 0 {
			fmt.Fprintf(md, "- %s: %.0f target group commits/s from a quarter into the load to its end (%.0f source commits/s achieved).\n",
				ph.label(), ph.ScaleOut.SteadyCommitsPerSec, ph.Load.Achieved)
		}
	}
	if one != nil && many != nil {
		if base := one.PeakRSSMB; base > 0 {
			var peaks []string
			for _, in := range many.ScaleOut.Instances {
				peaks = append(peaks, fmt.Sprintf("%.0f %%", float64(in.PeakRSSMB)/float64(base)*100))
			}
			fmt.Fprintf(md, "- %s: each instance's peak RSS against the single instance's (%d MB): %s.\n",
				many.label(), base, strings.Join(peaks, ", "))
		}
		if r := one.ScaleOut.SteadyCommitsPerSec; r > 0 && many.ScaleOut.SteadyCommitsPerSec > 0 {
			fmt.Fprintf(md, "- %s: %.2fx the single instance's target group commits/s.\n", many.label(), many.ScaleOut.SteadyCommitsPerSec/r)
		}
		if sr.Scenario.Kind == "first-start" {
			fmt.Fprintf(md, "- every pair synced: %s with one instance, %s with %d.\n", one.InitialSynced, many.InitialSynced, many.Instances)
		}
	}
	for _, ph := range sr.Phases {
		if ph.ScaleOut != nil && ph.ScaleOut.Kill != nil {
			k := ph.ScaleOut.Kill
			fmt.Fprintf(md, "- kill: %s SIGKILLed at %s (session timeout %s); it committed %d groups in the spell before, the others %d, none %d. "+
				"Its groups had a source commit made after the kill on the target %s after it (of which waiting for that commit to be made: up to %s; %d never); "+
				"the %d of them that committed within the session timeout of the kill, waiting for the hand-over, were on the target %s after it. "+
				"The other groups' longest source commit -> target delay from 2 s before the kill to the load's last 10 s: %s (before the kill: %s). "+
				"After the hand-over: %d groups committed by two instances, %d by none in a spell to the load's end.\n",
				k.Instance, k.At, k.SessionTimeout, k.Groups, k.OtherGroups, k.Unowned, k.Resumed, k.ResumeWait, k.NotResumed,
				k.HandedOverGroups, k.HandedOver, msf(k.OthersMaxDelayMS), msf(k.OthersMaxDelayBeforeMS), k.SharedAfter, k.UnownedAfter)
		}
	}
	fmt.Fprintf(md, "\n")
}

func groupCount(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// hasInstances says whether a scenario has per-instance samples to plot.
func hasInstances(sr scenarioResult) bool {
	return slices.ContainsFunc(sr.Phases, func(ph phaseResult) bool {
		return len(ph.Samples) > 0 && len(ph.Samples[0].InstanceRSSMB) > 0
	})
}
