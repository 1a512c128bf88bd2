//go:build linux

package scale

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// sample is one second of a phase.
type sample struct {
	T           float64 `json:"t"`              // seconds since the system was started
	CPU         float64 `json:"cpu"`            // the system's CPU, cores (1 = one core busy); summed over instances
	RSSMB       int64   `json:"rss_mb"`         // the system's resident memory; summed over instances
	BrokerCPU   float64 `json:"broker_cpu"`     // the target broker JVM's CPU, cores
	LoadAvg1    float64 `json:"loadavg1"`       // the machine's 1-minute load average
	ReaderLag   float64 `json:"reader_lag"`     // checkpointd: __consumer_offsets reader lag, records; -1 for MM2
	Pending     float64 `json:"groups_pending"` // checkpointd: target groups waiting for a commit; -1 when not read
	Backlog     int     `json:"backlog"`        // timed (commit, partition)s not yet on the target
	TargetRecPS float64 `json:"target_rec_s"`   // target commit records of the phase's groups per second
	// Per checkpointd instance, in start order, when a phase runs several
	// (0 once an instance is gone).
	InstanceCPU   []float64 `json:"instance_cpu,omitempty"`
	InstanceRSSMB []int64   `json:"instance_rss_mb,omitempty"`
}

type sampler struct {
	start  time.Time
	mu     sync.Mutex
	out    []sample
	events []event
	stopFn func()
}

type event struct {
	T    float64 `json:"t"`
	What string  `json:"what"`
}

// lagScrapeEvery is how many 1 s samples apart checkpointd's reader lag is
// read from its /metrics.
const lagScrapeEvery = 5

// startSampler samples the processes pids (the system: one, or several
// checkpointd instances) every second. cs are the checkpointd instances
// whose /metrics it reads every lagScrapeEvery samples; none for MM2, or
// when scraping would weigh on what is measured (per-group labels).
func startSampler(start time.Time, pids []int, brokerPid func() int, tr *tracker, cs []*cpd) *sampler {
	s := &sampler{start: start}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		lastT := time.Now()
		lastCPU := make([]float64, len(pids))
		for i, pid := range pids {
			lastCPU[i], _ = cpuSeconds(pid)
		}
		bp := brokerPid()
		lastB, _ := cpuSeconds(bp)
		lastRec, _ := tr.counts()
		n := 0
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			now := time.Now()
			dt := now.Sub(lastT).Seconds()
			sm := sample{T: now.Sub(start).Seconds(), LoadAvg1: loadAvg1(), ReaderLag: -1, Pending: -1, Backlog: tr.backlog()}
			if len(pids) > 1 {
				sm.InstanceCPU, sm.InstanceRSSMB = make([]float64, len(pids)), make([]int64, len(pids))
			}
			for i, pid := range pids {
				rss := max(0, statusKB(pid, "VmRSS")/1024)
				var cpu float64
				if cs, err := cpuSeconds(pid); err == nil {
					cpu = max(0, (cs-lastCPU[i])/dt)
					lastCPU[i] = cs
				}
				sm.RSSMB += rss
				sm.CPU += cpu
				if sm.InstanceRSSMB != nil {
					sm.InstanceRSSMB[i], sm.InstanceCPU[i] = rss, cpu
				}
			}
			if nb := brokerPid(); nb != bp {
				// A restarted broker: its start-up CPU counts in the phase's
				// total (cpuMeter), not as one spike in this plot.
				bp = nb
				lastB, _ = cpuSeconds(bp)
			}
			if bs, err := cpuSeconds(bp); err == nil {
				sm.BrokerCPU = max(0, (bs-lastB)/dt)
				lastB = bs
			}
			rec, _ := tr.counts()
			if rec < lastRec { // reset at the load's start
				lastRec = 0
			}
			sm.TargetRecPS = float64(rec-lastRec) / dt
			lastRec = rec
			// Scraped every lagScrapeEvery samples, not each second: a
			// /metrics scrape costs checkpointd about 5 ms of CPU (9 % of
			// its CPU at 100 groups when done each second), which no other
			// system in the comparison pays, and Prometheus scrapes every
			// 15 s to 1 min.
			if n%lagScrapeEvery == 0 {
				for _, c := range cs {
					if c.exited() {
						continue
					}
					if sc, err := c.scrape(time.Second); err == nil {
						if sc.ReaderLag >= 0 {
							sm.ReaderLag = max(sm.ReaderLag, 0) + sc.ReaderLag
						}
						if sc.Pending >= 0 {
							sm.Pending = max(sm.Pending, 0) + sc.Pending
						}
					}
				}
			}
			n++
			lastT = now
			s.mu.Lock()
			s.out = append(s.out, sm)
			s.mu.Unlock()
		}
	}()
	s.stopFn = sync.OnceFunc(func() { close(quit); <-done })
	return s
}

func (s *sampler) event(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, event{T: time.Since(s.start).Seconds(), What: what})
}

func (s *sampler) stop() []sample {
	s.stopFn()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}

// ---- results --------------------------------------------------------------------

type runResult struct {
	Started      time.Time         `json:"started"`
	Took         dur               `json:"took"`
	Kafka        string            `json:"kafka"`
	Go           string            `json:"go"`
	CPUs         int               `json:"cpus"`
	TimeFactor   float64           `json:"time_factor"`
	OffsetSyncs  string            `json:"offset_syncs"`
	TargetTiming string            `json:"target_timing"`
	ConnectJVM   string            `json:"connect_jvm_flags"`
	Tree         string            `json:"checkpointd_tree"`
	ExtraProps   map[string]string `json:"checkpointd_extra_props,omitempty"` // CHECKPOINTD_SCALE_PROPS
	NoopHandler  bool              `json:"checkpointd_noop_handler"`          // CHECKPOINTD_SCALE_NOOP_HANDLER
	Scenarios    []scenarioResult  `json:"scenarios"`
}

type scenarioResult struct {
	Scenario scenario      `json:"scenario"`
	Phases   []phaseResult `json:"phases"`
}

type loadResult struct {
	Asked    float64 `json:"asked_per_s"`
	Achieved float64 `json:"achieved_per_s"` // OffsetCommit requests that succeeded, per second
	Commits  int64   `json:"commits"`
	Failed   int64   `json:"failed"`
	Measured int64   `json:"timed_pairs"` // (commit, partition)s whose translation moved up, so timed
	Took     dur     `json:"took"`
}

type phaseResult struct {
	System         string `json:"system"`
	Instances      int    `json:"instances,omitempty"` // scale-out phases: checkpointd instances sharing the work
	ReadyAfter     dur    `json:"ready_after"`         // process start to ready (/readyz, or task RUNNING)
	InitialPairs   int    `json:"initial_pairs"`       // (group, partition)s committed before the start
	InitialSynced  dur    `json:"initial_synced"`      // start to every one of them on the target; "-" if not
	InitialMissing int    `json:"initial_missing"`
	LoadStartAt    dur    `json:"load_start_at"`             // since the start, in the samples' time
	RecoveredAfter dur    `json:"recovered_after,omitempty"` // broker-stop: target serving again -> no timed pair waiting

	Load   loadResult `json:"load"`
	Drain  dur        `json:"drain"`
	Window dur        `json:"window"` // load + drain: the CPU window

	DelayP50, DelayP90, DelayP99, DelayMax float64            `json:"-"`
	Delay                                  map[string]float64 `json:"delay_ms"` // p50 p90 p99 max mean
	Reached                                int                `json:"reached"`
	MissingPairs                           int                `json:"missing"`
	DelayHist                              []histBin          `json:"delay_hist"`

	CheckpointRecords    int64   `json:"checkpoint_records"`
	CheckpointsPerCommit float64 `json:"checkpoints_per_commit"` // per OffsetCommit request (initial ones included)
	TargetRecords        int64   `json:"target_commit_records"`
	TargetRequests       int64   `json:"target_commit_requests"` // distinct (group, commit time)
	TargetCommitsPerSec  float64 `json:"target_commits_per_s"`
	Lowered              int     `json:"target_offsets_lowered"`

	StartupCPUSeconds float64 `json:"startup_cpu_s"` // process start through the initial sync
	CPUSeconds        float64 `json:"cpu_s"`         // the load and drain window
	CPUPer1kCommits   float64 `json:"cpu_s_per_1k_commits"`
	BrokerCPUSeconds  float64 `json:"target_broker_cpu_s"`
	MaxRSSMB          int64   `json:"max_rss_mb"`  // of the samples: summed over instances
	PeakRSSMB         int64   `json:"peak_rss_mb"` // VmHWM; of the largest instance
	Threads           int     `json:"threads"`
	MaxLoadAvg        float64 `json:"max_loadavg1"`
	MaxReaderLag      float64 `json:"max_reader_lag"`
	EventsDropped     int64   `json:"events_dropped"` // checkpointd: events its typed handlers lost to a full queue, at the end
	// /readyz probed every 100 ms from the process start to the phase end
	// (checkpointd only): how long the slowest answer took and how many
	// took over a second.
	ReadyzProbes int `json:"readyz_probes,omitempty"`
	ReadyzMaxMS  int `json:"readyz_max_ms,omitempty"`
	ReadyzSlow   int `json:"readyz_over_1s,omitempty"`

	ScaleOut *scaleOutResult `json:"scale_out,omitempty"`

	Samples []sample `json:"samples"`
	Events  []event  `json:"events,omitempty"`
	LogTail []string `json:"log_problems,omitempty"`

	delays []float64
	doneAt []time.Time
}

type histBin struct {
	UpToMS float64 `json:"le_ms"`
	Count  int     `json:"n"`
}

func (ph *phaseResult) delayStats(tr *tracker) {
	ph.delays, ph.doneAt = tr.result()
	ph.MissingPairs = tr.backlog()
	ph.Reached = len(ph.delays)
	d := slices.Clone(ph.delays)
	slices.Sort(d)
	ph.DelayP50, ph.DelayP90, ph.DelayP99, ph.DelayMax = quantile(d, .5), quantile(d, .9), quantile(d, .99), quantile(d, 1)
	var sum float64
	for _, v := range d {
		sum += v
	}
	mean := sum / float64(max(1, len(d)))
	ph.Delay = map[string]float64{"p50": ph.DelayP50, "p90": ph.DelayP90, "p99": ph.DelayP99, "max": ph.DelayMax, "mean": mean}
	if len(d) == 0 {
		ph.Delay = nil
	}
	// Log-spaced bins from 1 ms to 10 min.
	bounds := []float64{}
	for b := 1.0; b <= 600000; b *= 1.5 {
		bounds = append(bounds, b)
	}
	j := 0
	for _, b := range bounds {
		n := 0
		for j < len(d) && d[j] <= b {
			j++
			n++
		}
		if n > 0 || len(ph.DelayHist) > 0 {
			ph.DelayHist = append(ph.DelayHist, histBin{UpToMS: b, Count: n})
		}
	}
}

func (ph phaseResult) summary() string {
	rec := ""
	if ph.RecoveredAfter != 0 {
		rec = fmt.Sprintf("; caught up %s after the target broker served again", ph.RecoveredAfter)
	}
	if ph.EventsDropped > 0 {
		rec += fmt.Sprintf("; typed event handlers dropped %d events (queue full)", ph.EventsDropped)
	}
	if ph.ReadyzProbes > 0 {
		rec += fmt.Sprintf("; /readyz slowest answer %d ms, %d of %d probes over 1 s", ph.ReadyzMaxMS, ph.ReadyzSlow, ph.ReadyzProbes)
	}
	return fmt.Sprintf("%s: ready %s, initial %d pairs in %s; load %.0f/%.0f commits/s (%d commits, %d timed pairs, %d reached, %d missing); "+
		"delay p50 %s p99 %s max %s; CPU to the initial sync %.1f s; checkpoints %d (%.2f per commit); target commits %.0f/s; CPU %.1f s (%.2f s per 1k commits), RSS max %d MB; broker CPU %.1f s; load avg max %.1f; reader lag max %s%s",
		ph.label(), ph.ReadyAfter, ph.InitialPairs, ph.InitialSynced, ph.Load.Achieved, ph.Load.Asked, ph.Load.Commits, ph.Load.Measured, ph.Reached, ph.MissingPairs,
		msf(ph.DelayP50), msf(ph.DelayP99), msf(ph.DelayMax), ph.StartupCPUSeconds, ph.CheckpointRecords, ph.CheckpointsPerCommit, ph.TargetCommitsPerSec,
		ph.CPUSeconds, ph.CPUPer1kCommits, ph.MaxRSSMB, ph.BrokerCPUSeconds, ph.MaxLoadAvg, ph.lag(), rec)
}

// lag is the maximum commit-reader lag, or n/a for MM2, which has no reader
// of __consumer_offsets (it lists group offsets every emit interval).
func (ph phaseResult) lag() string {
	if ph.System != "checkpointd" {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", ph.MaxReaderLag)
}

func msf(v float64) string {
	switch {
	case v != v:
		return "-"
	case v < 10000:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.1f s", v/1000)
	}
}
