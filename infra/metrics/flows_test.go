package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/checkpointd/checkpointd/messages"
)

// TestFlowsShareOneRegistry: the flows of one process register the same
// metrics in one registry, each series labelled with its flow, the router
// metrics and the pipeline's gauges included; the Go collector is the
// registry's, once.
func TestFlowsShareOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	flows := []struct{ source, target string }{{"A", "B"}, {"B", "A"}}
	for i, f := range flows {
		m := New(Config{Source: f.source, Target: f.target, GroupLabels: true, Registry: reg})
		m.CheckpointEmitted(context.Background(), messages.Checkpoint{Group: "g", TopicPartition: messages.TopicPartition{Topic: "orders", Partition: 0}}, time.Time{})
		m.GaugeFunc(GaugeOutboxQueued, "queued", func() float64 { return float64(i + 1) })
		m.GaugeFunc(GaugeOutboxQueued, "queued", func() float64 { return float64(10 * (i + 1)) }) // replaced, not added
		runRouterOnce(t, m)
	}
	for i, f := range flows {
		labels := map[string]string{"source": f.source, "target": f.target}
		if got := series(t, reg, "checkpointd_checkpoints_emitted_total", labels).GetCounter().GetValue(); got != 1 {
			t.Errorf("%s->%s emitted = %v, want 1", f.source, f.target, got)
		}
		if got := series(t, reg, "checkpointd_outbox_queued", labels).GetGauge().GetValue(); got != float64(10*(i+1)) {
			t.Errorf("%s->%s outbox_queued = %v, want %d", f.source, f.target, got, 10*(i+1))
		}
		ok := map[string]string{"source": f.source, "target": f.target, "success": "true"}
		if n, _ := histogram(t, reg, "checkpointd_router_handler_execution_time_seconds", ok); n != 1 {
			t.Errorf("%s->%s router handler calls = %d, want 1", f.source, f.target, n)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "go_goroutines" && len(mf.GetMetric()) != 1 {
			t.Errorf("go_goroutines has %d series, want 1", len(mf.GetMetric()))
		}
	}
}

// runRouterOnce passes one message through a router instrumented by m.
func runRouterOnce(t *testing.T, m *Metrics) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	m.AddRouter(router)
	done := make(chan struct{})
	router.AddConsumerHandler("translate_commits", "in", in, func(*message.Message) error { close(done); return nil })
	go func() { _ = router.Run(ctx) }()
	<-router.Running()
	if err := in.Publish("in", message.NewMessage(watermill.NewUUID(), nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("message not handled")
	}
	// The histogram is observed after the handler returns.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if n, _ := histogram(t, m.reg, "checkpointd_router_handler_execution_time_seconds",
			map[string]string{"source": m.cfg.Source, "target": m.cfg.Target, "success": "true"}); n == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("handler call not counted")
}

// TestHealthOfSeveralFlows: /readyz is ready only when every flow is, and
// names each flow, its state and its stages; /healthz names them too.
func TestHealthOfSeveralFlows(t *testing.T) {
	notReady := errors.New("gate closed")
	tests := []struct {
		name       string
		ab, ba     ReadyFunc // nil: not built yet
		wantStatus int
		wantLines  []string
	}{
		{"both ready", readyWith(nil), readyWith(nil), http.StatusOK,
			[]string{"ready", "A->B: ready (stages: offset-syncs reader on source \"A\")", "B->A: ready (stages: offset-syncs reader on source \"B\")"}},
		{"one not ready", readyWith(nil), readyWith(notReady), http.StatusServiceUnavailable,
			[]string{"not ready: B->A", "A->B: ready (stages: offset-syncs reader on source \"A\")", "B->A: not ready: gate closed (stages: offset-syncs reader on source \"B\")"}},
		{"one still starting", nil, readyWith(nil), http.StatusServiceUnavailable,
			[]string{"not ready: A->B", "A->B: not ready: starting", "B->A: ready (stages: offset-syncs reader on source \"B\")"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var whole, ab, ba Health
			for _, f := range []struct {
				h     *Health
				src   string
				ready ReadyFunc
			}{{&ab, "A", tt.ab}, {&ba, "B", tt.ba}} {
				if f.ready != nil {
					f.h.SetReady(f.ready)
					f.h.SetStages(func() []string { return []string{"offset-syncs reader on source \"" + f.src + "\""} })
				}
			}
			whole.Join(Part{Name: "A->B", Health: &ab}, Part{Name: "B->A", Health: &ba})
			mux := http.NewServeMux()
			whole.Register(mux)
			srv := httptest.NewServer(mux)
			defer srv.Close()

			status, body := get(t, srv.URL+"/readyz")
			if status != tt.wantStatus {
				t.Errorf("/readyz status %d, want %d", status, tt.wantStatus)
			}
			if got := strings.Split(strings.TrimSpace(body), "\n"); !slices.Equal(got, tt.wantLines) {
				t.Errorf("/readyz body\n%s\nwant\n%s", body, strings.Join(tt.wantLines, "\n"))
			}
			if err := whole.Ready(context.Background()); (err == nil) != (tt.wantStatus == http.StatusOK) {
				t.Errorf("Ready = %v", err)
			}
			status, body = get(t, srv.URL+"/healthz")
			if status != http.StatusOK || !strings.HasPrefix(body, "ok\nA->B: running") || !strings.Contains(body, "\nB->A: running") {
				t.Errorf("/healthz %d %q", status, body)
			}
		})
	}
}

func readyWith(err error) ReadyFunc { return func(context.Context) error { return err } }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
