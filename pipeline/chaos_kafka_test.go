package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	runhistory "github.com/checkpointd/checkpointd/internal/testbed/history"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/pipeline"
)

// TestChaosShort runs checkpointd through fault proxies (every connection to
// either cluster goes through toxiproxy) while groups commit steadily, and
// breaks the network a few seconds at a time: to the target, 50–500 ms of
// latency then a black hole (connections stay open, no data flows); to the
// source, a black hole; to both, latency. /readyz answers within a second
// throughout, turns 503 naming the black-holed cluster (never the other)
// within the health timeout, and is 200 again within 10 s of each heal.
// Then the whole run's history is checked: nothing skipped, nothing back,
// every commit on the target within 10 s of being made or of the end of
// the fault it met. It is the short chaos run of make test (under a minute).
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs real Kafka")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bed, err := kafkatest.StartBed(ctx, kafkatest.BedOptions{FaultProxies: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.Close() })

	const partitions, groups = 2, 10
	const healthTimeout = 5 * time.Second
	topic := kafkatest.UniqueName(t, "orders")
	bed.Source.CreateTopic(t, topic, partitions, nil)
	bed.Target.CreateTopic(t, bed.RemoteTopic(topic), partitions, nil)
	bed.Source.CreateTopic(t, bed.OffsetSyncsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	bed.Target.CreateTopic(t, bed.CheckpointsTopic(), 1, map[string]string{"cleanup.policy": "compact"})

	// The load goes direct: only checkpointd sees the faults.
	load := startLoad(t, bed, topic, partitions, groups)
	defer load.stop()

	props := [][2]string{
		{"source.cluster.alias", bed.Source.Alias},
		{"target.cluster.alias", bed.Target.Alias},
		{"source.cluster.bootstrap.servers", bed.Source.ProxiedBootstrap},
		{"target.cluster.bootstrap.servers", bed.Target.ProxiedBootstrap},
		{"groups", "load-.*"},
		{"sync.group.offsets.enabled", "true"},
		{"sync.group.offsets.interval.seconds", "1"},
		{"checkpointd.group.id", kafkatest.UniqueName(t, "checkpointd")},
		{"checkpointd.health.stage.failure.timeout.ms", fmt.Sprint(healthTimeout.Milliseconds())},
	}
	cfg := loadConfig(t, writeConfig(t, "chaos.yaml", props))
	m, health, base := serveMetrics(t, cfg)

	p, err := pipeline.New(ctx, cfg, pipeline.WithLogger(testLogger(t, "chaos")), pipeline.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	health.SetReady(p.Ready)
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(runCtx) }()
	stopped := false
	stopPipeline := func() {
		if stopped {
			return
		}
		stopped = true
		stop()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(stopTimeout):
			t.Error("Run did not return after cancel")
		}
	}
	defer stopPipeline()

	probes := newReadyProber(base)
	defer probes.stop()
	kafkatest.WaitFor(t, 60*time.Second, "/readyz 200 with checkpoints flowing", func() error {
		if code, body, _ := probes.last(); code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %q", code, body)
		}
		if n := scrapeMetrics(t, base).value("checkpointd_checkpoints_published_total"); n < 50 {
			return fmt.Errorf("%v checkpoints published", n)
		}
		return nil
	})
	probes.reset()

	// The faults, one after another, each healed before the next. A black
	// hole must make /readyz name its cluster, and only it, within the
	// health timeout; after each heal /readyz is 200 within 10 s.
	type fault struct {
		name     string
		on       []*kafkatest.Cluster
		latency  time.Duration // first, for this long: 50–500 ms each way
		blackout time.Duration // then a black hole for this long
		names    string        // the cluster /readyz must name in the black hole
		spares   string        // a cluster it must not name
	}
	var windows []runhistory.Window
	for _, f := range []fault{
		{name: "target: latency then black hole", on: []*kafkatest.Cluster{bed.Target}, latency: 4 * time.Second, blackout: 6 * time.Second,
			names: `target "target"`, spares: `source "source"`},
		{name: "source: black hole", on: []*kafkatest.Cluster{bed.Source}, blackout: 6 * time.Second,
			names: `source "source"`, spares: `target "target"`},
		{name: "both: latency", on: []*kafkatest.Cluster{bed.Source, bed.Target}, latency: 5 * time.Second},
	} {
		began := time.Now()
		if f.latency > 0 {
			for _, c := range f.on {
				if err := c.Faults.Latency(275, 225); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(f.latency)
		}
		if f.blackout > 0 {
			holed := time.Now()
			for _, c := range f.on {
				if err := c.Faults.BlackHole(); err != nil {
					t.Fatal(err)
				}
			}
			var named time.Duration
			kafkatest.WaitFor(t, 2*healthTimeout, f.name+": /readyz 503 naming "+f.names, func() error {
				code, body, _ := probes.last()
				if code != http.StatusServiceUnavailable || !strings.Contains(body, f.names) {
					return fmt.Errorf("/readyz = %d %q", code, body)
				}
				named = time.Since(holed)
				return nil
			})
			_, body, _ := probes.last()
			t.Logf("%s: /readyz 503 naming it after %v: %s", f.name, named.Round(time.Millisecond), body)
			if named > healthTimeout {
				t.Errorf("%s: /readyz named %s only after %v, want within the health timeout %v", f.name, f.names, named.Round(time.Millisecond), healthTimeout)
			}
			if strings.Contains(body, f.spares) {
				t.Errorf("%s: /readyz blames %s, which is fine: %s", f.name, f.spares, body)
			}
			time.Sleep(max(0, f.blackout-time.Since(holed)))
		}
		for _, c := range f.on {
			c.Faults.Heal()
		}
		healed := time.Now()
		windows = append(windows, runhistory.Window{From: began, To: healed})
		kafkatest.WaitFor(t, 60*time.Second, f.name+": /readyz 200 after the heal", func() error {
			if code, body, _ := probes.last(); code != http.StatusOK {
				return fmt.Errorf("/readyz = %d %q", code, body)
			}
			return nil
		})
		readyAfter := time.Since(healed)
		t.Logf("%s: healed, /readyz 200 after %v", f.name, readyAfter.Round(time.Millisecond))
		if readyAfter > 10*time.Second {
			t.Errorf("%s: /readyz 200 only %v after the heal, want within 10s", f.name, readyAfter.Round(time.Millisecond))
		}
		time.Sleep(2 * time.Second) // a steady spell between faults
	}
	t.Logf("slowest /readyz answer during the faults %v", probes.slowest().Round(time.Millisecond))
	if s := probes.slowest(); s > time.Second {
		t.Errorf("slowest /readyz answer %v, want within 1s", s)
	}

	// A few seconds more of load after the heal, then every group caught
	// up, then the history.
	time.Sleep(3 * time.Second)
	load.stop()
	loadStopped := time.Now()
	// Not fatal: the history below says what went wrong, and how.
	behind := func() error {
		for g := range groups {
			group := fmt.Sprintf("load-%d", g)
			src := bed.Source.CommittedOffsets(t, group)
			tgt := bed.Target.CommittedOffsets(t, group)
			for tp, o := range src {
				remote := tp
				remote.Topic = bed.RemoteTopic(tp.Topic)
				if tgt[remote] != o {
					return fmt.Errorf("group %s %s: target %d, source %d", group, tp, tgt[remote], o)
				}
			}
		}
		return nil
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := behind()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("not every target group at its last source commit 30s after the load stopped: %v", err)
			break
		}
	}
	caughtUp := time.Since(loadStopped)
	stopPipeline()
	h := runhistory.Read(t, runhistory.ReadOptions{
		Source: bed.Source, Target: bed.Target,
		Groups: func(g string) bool { return strings.HasPrefix(g, "load-") }, Topics: func(s string) bool { return s == topic },
		Remote: bed.RemoteTopic, SyncsTopic: bed.OffsetSyncsTopic(), CheckpointsTopic: bed.CheckpointsTopic(),
	})
	// startLoad writes its syncs at the same offsets on both sides.
	h.Replicated, h.Faults, h.Bound, h.SyncsTarget = runhistory.Identity{}, windows, 10*time.Second, true
	h.End = h.End.Add(h.Bound) // every group caught up: nothing more was to come
	st := runhistory.Verify(t, h)
	if st.Judged == 0 {
		t.Error("history: no commit judged")
	}
	t.Logf("chaos: every group at its last source commit %v after the load stopped; worst commit-to-target lag %v, %v after the end of the fault it met",
		caughtUp.Round(time.Millisecond), st.WorstLag.Round(time.Millisecond), st.WorstCatchUp.Round(time.Millisecond))
}
