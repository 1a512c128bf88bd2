package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/pipeline"
)

// TestReadinessTargetDownUnderLoad stops the target broker while groups
// commit steadily and checkpoints flow, and probes /readyz every 100 ms
// throughout: every answer comes within a second, it turns 503 naming the
// target cluster (never the source), then also the checkpoint publisher once
// that stage has failed for checkpointd.health.stage.failure.timeout.ms, and
// 200 again once the broker is back. The broker stays down until the idle
// checkpoints reader has failed for the timeout too: it has nothing to
// succeed at once the broker is back, yet /readyz must follow the cluster and
// be 200 again within 10 s (it used to wait for the reader's failures to go
// stale, the timeout plus two retry gaps). It runs on a bed of its own, since
// it stops a broker.
func TestReadinessTargetDownUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs real Kafka")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bed, err := kafkatest.StartBed(ctx, kafkatest.BedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.Close() })
	t.Logf("bed ready in %s", bed.ReadyIn.Round(time.Millisecond))

	const partitions, groups = 4, 20
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
	cfg := loadConfig(t, writeConfig(t, "ready.yaml", props))
	m, health, base := serveMetrics(t, cfg)

	logger := testLogger(t, "ready")
	p, err := pipeline.New(ctx, cfg, pipeline.WithLogger(logger), pipeline.WithMetrics(m))
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
	kafkatest.WaitFor(t, 60*time.Second, "/readyz 200 with checkpoints flowing", func() error {
		code, body, _ := probes.last()
		if code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %q", code, body)
		}
		if n := scrapeMetrics(t, base).value("checkpointd_checkpoints_published_total"); n < 100 {
			return fmt.Errorf("%v checkpoints published", n)
		}
		return nil
	})
	if s := probes.slowest(); s > time.Second {
		t.Errorf("while up: slowest /readyz %v", s)
	}
	probes.reset()

	stoppedAt := time.Now()
	if err := bed.Target.StopBroker(); err != nil {
		t.Fatal(err)
	}
	t.Logf("target broker stopped in %v", time.Since(stoppedAt).Round(time.Millisecond))
	var firstTarget, firstStage, firstReader time.Duration
	kafkatest.WaitFor(t, 45*time.Second, "/readyz 503 naming the target cluster, the checkpoint publisher and the checkpoints reader", func() error {
		code, body, _ := probes.last()
		if code == http.StatusServiceUnavailable && strings.Contains(body, `cluster target "target"`) && firstTarget == 0 {
			firstTarget = time.Since(stoppedAt)
		}
		if code == http.StatusServiceUnavailable && strings.Contains(body, `stage checkpoint publisher on cluster target "target"`) && firstStage == 0 {
			firstStage = time.Since(stoppedAt)
		}
		if code == http.StatusServiceUnavailable && strings.Contains(body, `stage checkpoints reader on cluster target "target"`) && firstReader == 0 {
			firstReader = time.Since(stoppedAt)
		}
		if firstTarget == 0 || firstStage == 0 || firstReader == 0 {
			return fmt.Errorf("/readyz = %d %q", code, body)
		}
		return nil
	})
	_, body, _ := probes.last()
	t.Logf("target down: /readyz names the target after %v, the publisher after %v, the checkpoints reader after %v: %s",
		firstTarget.Round(time.Millisecond), firstStage.Round(time.Millisecond), firstReader.Round(time.Millisecond), body)
	if strings.Contains(body, "source") && strings.Contains(body, `cluster source "source"`) {
		t.Errorf("/readyz blames the source, which is up: %s", body)
	}
	downSlowest, downCount := probes.slowest(), probes.count()
	if downSlowest > time.Second {
		t.Errorf("target down: slowest /readyz %v, want under 1s", downSlowest)
	}
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with the target down = %d", code)
	}
	t.Logf("target down: %d /readyz answers, slowest %v", downCount, downSlowest.Round(time.Millisecond))
	probes.reset()

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
	t.Logf("target back: ready again after %v; slowest /readyz %v", readyAfter.Round(time.Millisecond), probes.slowest().Round(time.Millisecond))
	if readyAfter > 10*time.Second {
		t.Errorf("target back: /readyz 200 only after %v, want within 10s of the broker's return", readyAfter.Round(time.Millisecond))
	}
	if s := probes.slowest(); s > time.Second {
		t.Errorf("target coming back: slowest /readyz %v", s)
	}
	if n := load.commits.Load(); n == 0 {
		t.Error("the load committed nothing")
	}
}

// readyProber GETs /readyz every 100 ms and keeps the last answer and the
// slowest response time.
type readyProber struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	code     int
	body     string
	slow     time.Duration
	n        int
	lastTook time.Duration
}

func newReadyProber(base string) *readyProber {
	ctx, cancel := context.WithCancel(context.Background())
	r := &readyProber{cancel: cancel, done: make(chan struct{})}
	client := &http.Client{Timeout: 10 * time.Second}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			began := time.Now()
			code, body := 0, ""
			resp, err := client.Get(base + "/readyz")
			if err != nil {
				body = err.Error()
			} else {
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				code, body = resp.StatusCode, strings.TrimSpace(string(b))
			}
			took := time.Since(began)
			r.mu.Lock()
			r.code, r.body, r.lastTook = code, body, took
			r.slow = max(r.slow, took)
			r.n++
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return r
}

func (r *readyProber) last() (int, string, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code, r.body, r.lastTook
}

func (r *readyProber) slowest() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.slow
}

func (r *readyProber) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *readyProber) reset() {
	r.mu.Lock()
	r.slow, r.n = 0, 0
	r.mu.Unlock()
}

func (r *readyProber) stop() { r.cancel(); <-r.done }

// load writes an offset sync per partition and commits every group on every
// partition, 20 times a second, each round 10 offsets further, so that each
// commit gives a new checkpoint. It goes on while the target is down.
type load struct {
	cancel  context.CancelFunc
	done    chan struct{}
	commits atomic.Int64
}

func startLoad(t *testing.T, bed *kafkatest.Bed, topic string, partitions int32, groups int) *load {
	t.Helper()
	client := bed.Source.Client(t)
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer producer.Close()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for round := int64(1); ; round++ {
			off := round * 10
			var syncs []*sarama.ProducerMessage
			for p := range partitions {
				s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: topic, Partition: p}, UpstreamOffset: off, DownstreamOffset: off}
				syncs = append(syncs, &sarama.ProducerMessage{Topic: bed.OffsetSyncsTopic(), Partition: 0,
					Key: sarama.ByteEncoder(s.Key()), Value: sarama.ByteEncoder(s.Value())})
			}
			if err := producer.SendMessages(syncs); err == nil {
				for g := range groups {
					group := fmt.Sprintf("load-%d", g)
					req := sarama.NewOffsetCommitRequest(client.Config(), group)
					for p := range partitions {
						req.AddBlockWithLeaderEpoch(topic, p, off+1, -1, 0, "")
					}
					if coord, err := client.Coordinator(group); err == nil {
						if _, err := coord.CommitOffset(req); err == nil {
							l.commits.Add(1)
						} else {
							_ = client.RefreshCoordinator(group)
						}
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
	return l
}

func (l *load) stop() { l.cancel(); <-l.done }
