package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/pipeline"
)

// TestReadinessIdleReadersAfterTargetOutage stops the target broker when
// nothing is happening: the load has stopped, every checkpoint is written and
// every target group committed. Only the readers on the target notice the
// outage; once it has lasted past the failure timeout /readyz names the idle
// checkpoints reader. When the broker is back those readers have nothing to
// read, so nothing they do can report a success: /readyz must still be 200
// within 10 s, because it follows the cluster (it used to wait for their
// failures to go stale, the timeout plus two retry gaps).
func TestReadinessIdleReadersAfterTargetOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs real Kafka")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bed, err := kafkatest.StartBed(ctx, kafkatest.BedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.Close() })

	const partitions, groups = 2, 5
	topic := kafkatest.UniqueName(t, "orders")
	bed.Source.CreateTopic(t, topic, partitions, nil)
	bed.Target.CreateTopic(t, bed.RemoteTopic(topic), partitions, nil)
	bed.Source.CreateTopic(t, bed.OffsetSyncsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	bed.Target.CreateTopic(t, bed.CheckpointsTopic(), 1, map[string]string{"cleanup.policy": "compact"})

	load := startLoad(t, bed, topic, partitions, groups)
	defer load.stop()

	props := [][2]string{
		{"source.cluster.alias", bed.Source.Alias},
		{"target.cluster.alias", bed.Target.Alias},
		{"source.cluster.bootstrap.servers", bed.Source.Bootstrap},
		{"target.cluster.bootstrap.servers", bed.Target.Bootstrap},
		{"groups", "load-.*"},
		{"sync.group.offsets.enabled", "true"},
		{"sync.group.offsets.interval.seconds", "1"},
		{"checkpointd.group.id", kafkatest.UniqueName(t, "checkpointd")},
		{"checkpointd.health.stage.failure.timeout.ms", "3000"},
	}
	cfg := loadConfig(t, writeConfig(t, "ready-idle.yaml", props))
	m, health, base := serveMetrics(t, cfg)

	p, err := pipeline.New(ctx, cfg, pipeline.WithLogger(testLogger(t, "ready-idle")), pipeline.WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	health.SetReady(p.Ready)
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(runCtx) }()
	defer func() {
		stop()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(stopTimeout):
			t.Error("Run did not return after cancel")
		}
	}()

	probes := newReadyProber(base)
	defer probes.stop()
	kafkatest.WaitFor(t, 60*time.Second, "checkpoints flowing", func() error {
		if n := scrapeMetrics(t, base).value("checkpointd_checkpoints_published_total"); n < 20 {
			return fmt.Errorf("%v checkpoints published", n)
		}
		return nil
	})
	load.stop()
	kafkatest.WaitFor(t, 30*time.Second, "everything written and committed, /readyz 200", func() error {
		s := scrapeMetrics(t, base)
		if q, pend := s.value("checkpointd_outbox_queued"), s.value("checkpointd_target_groups_pending"); q != 0 || pend != 0 {
			return fmt.Errorf("%v checkpoints queued, %v target groups pending", q, pend)
		}
		if code, body, _ := probes.last(); code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %q", code, body)
		}
		return nil
	})

	stoppedAt := time.Now()
	if err := bed.Target.StopBroker(); err != nil {
		t.Fatal(err)
	}
	const reader = `stage checkpoints reader on cluster target "target"`
	kafkatest.WaitFor(t, 60*time.Second, "/readyz 503 naming the idle checkpoints reader", func() error {
		if code, body, _ := probes.last(); code != http.StatusServiceUnavailable || !strings.Contains(body, reader) {
			return fmt.Errorf("/readyz = %d %q", code, body)
		}
		return nil
	})
	_, body, _ := probes.last()
	t.Logf("target down for %v: %s", time.Since(stoppedAt).Round(time.Millisecond), body)

	if err := bed.Target.RestartBroker(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	kafkatest.WaitFor(t, 60*time.Second, "/readyz 200 once the target is back", func() error {
		if code, body, _ := probes.last(); code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %q", code, body)
		}
		return nil
	})
	readyAfter := time.Since(back)
	t.Logf("target back: ready again after %v", readyAfter.Round(time.Millisecond))
	if readyAfter > 10*time.Second {
		t.Errorf("/readyz 200 only %v after the target came back, want within 10s: readiness followed stale failures of idle stages, not the cluster",
			readyAfter.Round(time.Millisecond))
	}
}
