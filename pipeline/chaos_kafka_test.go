package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/checkpointd/checkpointd/infra/metrics"
	runhistory "github.com/checkpointd/checkpointd/internal/testbed/history"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/pipeline"
)

// TestChaosTargetLatencyThenBlackHole runs checkpointd through fault proxies
// (every connection to either cluster goes through toxiproxy) while groups
// commit steadily, and breaks the network to the target: 50–500 ms of
// latency for a few seconds, then a black hole (connections stay open, no
// data flows) for a few seconds more, then heals. /readyz answers within a
// second throughout, turns 503 naming the target cluster (never the source)
// within the health timeout of the black hole, and is 200 again within 10 s
// of the heal. Then the whole run's history is checked: nothing skipped,
// nothing back, every commit on the target within 10 s of being made or of
// the heal.
func TestChaosTargetLatencyThenBlackHole(t *testing.T) {
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
	m := metrics.New(metrics.Config{Source: cfg.SourceAlias, Target: cfg.TargetAlias, Registry: prometheus.NewRegistry()})
	var health metrics.Health
	srv, err := metrics.Listen("127.0.0.1:0", m, &health, testLogger(t, "http"))
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServing := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx) }()
	defer func() { stopServing(); <-served }()
	base := "http://" + srv.Addr()

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

	// Latency with jitter, then a black hole, on the target only.
	if err := bed.Target.Faults.Latency(275, 225); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	holed := time.Now()
	if err := bed.Target.Faults.BlackHole(); err != nil {
		t.Fatal(err)
	}
	var named time.Duration
	kafkatest.WaitFor(t, 2*healthTimeout, "/readyz 503 naming the target", func() error {
		code, body, _ := probes.last()
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `target "target"`) {
			return fmt.Errorf("/readyz = %d %q", code, body)
		}
		named = time.Since(holed)
		if strings.Contains(body, `source "source"`) {
			t.Errorf("/readyz blames the source, which is fine: %s", body)
		}
		return nil
	})
	_, body, _ := probes.last()
	t.Logf("black hole on the target: /readyz 503 naming it after %v: %s", named.Round(time.Millisecond), body)
	if named > healthTimeout {
		t.Errorf("/readyz named the black-holed target only after %v, want within the health timeout %v", named.Round(time.Millisecond), healthTimeout)
	}
	time.Sleep(max(0, 6*time.Second-time.Since(holed)))
	bed.Target.Faults.Heal()
	healed := time.Now()
	kafkatest.WaitFor(t, 60*time.Second, "/readyz 200 after the heal", func() error {
		if code, body, _ := probes.last(); code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %q", code, body)
		}
		return nil
	})
	readyAfter := time.Since(healed)
	t.Logf("healed: /readyz 200 after %v; slowest /readyz answer during the run %v", readyAfter.Round(time.Millisecond), probes.slowest().Round(time.Millisecond))
	if readyAfter > 10*time.Second {
		t.Errorf("/readyz 200 only %v after the heal, want within 10s", readyAfter.Round(time.Millisecond))
	}
	if s := probes.slowest(); s > time.Second {
		t.Errorf("slowest /readyz answer %v, want within 1s", s)
	}

	// A few seconds more of load after the heal, then every group caught
	// up, then the history.
	time.Sleep(3 * time.Second)
	load.stop()
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
	caughtUp := time.Since(healed)
	stopPipeline()
	h := runhistory.Read(t, runhistory.ReadOptions{
		Source: bed.Source, Target: bed.Target,
		Groups: func(g string) bool { return strings.HasPrefix(g, "load-") }, Topics: func(s string) bool { return s == topic },
		Remote: bed.RemoteTopic, SyncsTopic: bed.OffsetSyncsTopic(), CheckpointsTopic: bed.CheckpointsTopic(),
	})
	// startLoad writes its syncs at the same offsets on both sides.
	h.Replicated, h.Healed, h.Bound, h.SyncsTarget = runhistory.Identity{}, healed, 10*time.Second, true
	h.End = h.End.Add(h.Bound) // every group caught up: nothing more was to come
	st := runhistory.Verify(t, h)
	if st.Judged == 0 {
		t.Error("history: no commit judged")
	}
	t.Logf("chaos: every group caught up %v after the heal; worst commit-to-target lag %v", caughtUp.Round(time.Millisecond), st.WorstLag.Round(time.Millisecond))
}
