package pipeline_test

// The extension API on two embedded clusters (kfake, no Java): every event
// kind reaches typed handlers, a policy renames and vetoes, router hooks
// and middleware all run, and wrong names are New's errors.

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/handlers/policy"
	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/internal/testbed/embedded"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/event"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
	"github.com/checkpointd/checkpointd/pipeline"
)

// eventLog keeps every event a handler got.
type eventLog struct {
	mu  sync.Mutex
	all []event.Event
}

func (l *eventLog) handle(_ context.Context, e event.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, e)
	return nil
}

// find waits for an event that match accepts.
func (l *eventLog) find(t *testing.T, what string, match func(event.Event) bool) event.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		for _, e := range l.all {
			if match(e) {
				l.mu.Unlock()
				return e
			}
		}
		l.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s event", what)
	return nil
}

func embeddedConfig(t *testing.T, pair *embedded.Pair, extra map[string]string) *config.Config {
	t.Helper()
	cfg, _, err := config.FromProperties(pair.Properties(extra), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestExtensionsOnEmbeddedClusters(t *testing.T) {
	pair := embedded.Start(t)
	orders := pair.Mirror(t, "orders", 5, 5)
	pair.Source.Commit(t, "app", orders, 10)
	pair.Source.Commit(t, "vetoed", orders, 10)

	var all eventLog
	var decisions atomic.Int32
	forwarded := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 1024}, watermill.NopLogger{})
	defer forwarded.Close()
	fwd, err := forwarded.Subscribe(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	var mwCalls atomic.Int32
	countMW := func(next events.HandlerFunc) events.HandlerFunc {
		return func(ctx context.Context, e event.Event) ([]*message.Message, error) {
			mwCalls.Add(1)
			return next(ctx, e)
		}
	}
	var translateHooks, commitHooks, translateMW, commitMW atomic.Int32
	routerMW := func(n *atomic.Int32) message.HandlerMiddleware {
		return func(h message.HandlerFunc) message.HandlerFunc {
			return func(msg *message.Message) ([]*message.Message, error) { n.Add(1); return h(msg) }
		}
	}
	cfg := embeddedConfig(t, pair, nil)
	p, err := pipeline.New(t.Context(), cfg,
		pipeline.WithLogger(quietLogger()),
		pipeline.WithEventHandler(
			events.AddNoPublisherHandler("everything", all.handle).AddMiddleware(countMW),
			events.AddNoPublisherHandler("decisions", func(context.Context, event.CheckpointDecided) error {
				decisions.Add(1)
				return nil
			}),
		),
		pipeline.WithEventHandler(events.Forward("forward", "events", forwarded, nil, event.KindCheckpointWritten)),
		pipeline.WithCheckpointPolicy(policy.Policy{TargetGroup: policy.Rename(map[string]string{"app": "app-dr"})}),
		pipeline.WithCheckpointPolicy(policy.Policy{Veto: func(_ context.Context, cp messages.Checkpoint) bool { return cp.Group == "vetoed" }}),
		pipeline.WithTranslateRouter(func(*message.Router) { translateHooks.Add(1) }),
		pipeline.WithTranslateRouter(func(*message.Router) { translateHooks.Add(1) }),
		pipeline.WithCommitRouter(func(*message.Router) { commitHooks.Add(1) }),
		pipeline.WithTranslateMiddleware(routerMW(&translateMW)),
		pipeline.WithCommitMiddleware(routerMW(&commitMW)),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case <-p.Running():
	case <-time.After(30 * time.Second):
		t.Fatal("the routers did not start")
	}

	downstream := messages.TopicPartition{Topic: "source.orders", Partition: 0}
	all.find(t, "source commit", func(e event.Event) bool {
		c, ok := e.(event.SourceCommitRead)
		return ok && c.Group == "app" && c.Topic == "orders" && c.Offset == 10
	})
	all.find(t, "offset sync", func(e event.Event) bool {
		s, ok := e.(event.OffsetSyncApplied)
		return ok && s.Topic == "orders" && s.UpstreamOffset == 5 && s.DownstreamOffset == 5
	})
	all.find(t, "emitted decision", func(e event.Event) bool {
		d, ok := e.(event.CheckpointDecided)
		return ok && d.Group == "app" && d.Emitted && d.Topic == "orders" && d.DownstreamTopic == downstream.Topic && d.DownstreamOffset == 6
	})
	all.find(t, "vetoed decision", func(e event.Event) bool {
		d, ok := e.(event.CheckpointDecided)
		return ok && d.Group == "vetoed" && !d.Emitted && d.Reason == messages.SkipVetoed
	})
	all.find(t, "checkpoint written", func(e event.Event) bool {
		w, ok := e.(event.CheckpointWritten)
		return ok && w.Group == "app" && w.Topic == downstream.Topic && w.DownstreamOffset == 6
	})
	all.find(t, "target commit", func(e event.Event) bool {
		r, ok := e.(event.TargetCommitResult)
		return ok && r.Group == "app" && r.TargetGroup == "app-dr" && r.Reason == targetgroup.Committed
	})
	if got := pair.Target.Offset(t, "app-dr", downstream); got != 6 {
		t.Errorf("renamed target group at %d, want 6", got)
	}
	if got := pair.Target.Offset(t, "app", downstream); got != -1 {
		t.Errorf("the source group's name got offset %d on the target; the policy renames it", got)
	}
	if got := pair.Target.Offset(t, "vetoed", downstream); got != -1 {
		t.Errorf("a vetoed checkpoint was committed at %d", got)
	}
	select {
	case msg := <-fwd:
		msg.Ack()
		e, err := events.JSONMarshaler{}.Unmarshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := e.(event.CheckpointWritten); !ok || w.Group != "app" {
			t.Errorf("forwarded %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Error("nothing forwarded")
	}
	for name, n := range map[string]int32{"translate router hooks": translateHooks.Load(), "commit router hooks": commitHooks.Load()} {
		want := int32(1)
		if strings.HasPrefix(name, "translate") {
			want = 2 // options append
		}
		if n != want {
			t.Errorf("%s called %d times, want %d", name, n, want)
		}
	}
	if translateMW.Load() == 0 || commitMW.Load() == 0 || mwCalls.Load() == 0 || decisions.Load() == 0 {
		t.Errorf("middleware calls: translate %d, commit %d, event %d; decisions %d",
			translateMW.Load(), commitMW.Load(), mwCalls.Load(), decisions.Load())
	}
	for _, st := range p.EventStats() {
		if st.Dropped != 0 || st.Failed != 0 {
			t.Errorf("handler %s: %+v", st.Handler, st)
		}
	}
}

// New refuses what would have panicked in Watermill or silently not run,
// before it connects to anything.
func TestNewRejectsUnsafeComposition(t *testing.T) {
	noop := func(*message.Message) error { return nil }
	decided := func(name string) *events.Handler {
		return events.AddNoPublisherHandler(name, func(context.Context, event.CheckpointDecided) error { return nil })
	}
	props := map[string]string{
		"source.cluster.alias": "source", "target.cluster.alias": "target",
		"source.cluster.bootstrap.servers": "127.0.0.1:1", "target.cluster.bootstrap.servers": "127.0.0.1:1",
	}
	for _, tt := range []struct {
		name  string
		sync  bool
		opts  []pipeline.Option
		wants string
	}{
		{"checkpoint handler named like a built-in", true, []pipeline.Option{pipeline.WithCheckpointHandler("sync_target_offsets", noop)}, "built-in"},
		{"event handler named like a built-in", true, []pipeline.Option{pipeline.WithEventHandler(decided("translate_commits"))}, "built-in"},
		{"event and checkpoint handler share a name", true, []pipeline.Option{pipeline.WithCheckpointHandler("audit", noop), pipeline.WithEventHandler(decided("audit"))}, "taken"},
		{"two event handlers share a name", true, []pipeline.Option{pipeline.WithEventHandler(decided("a")), pipeline.WithEventHandler(decided("a"))}, "taken"},
		{"commit hook without a commit router", false, []pipeline.Option{pipeline.WithCommitRouter(func(*message.Router) {})}, "sync.group.offsets.enabled=false"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := map[string]string{"sync.group.offsets.enabled": "false"}
			if tt.sync {
				p["sync.group.offsets.enabled"] = "true"
			}
			for k, v := range props {
				p[k] = v
			}
			cfg, _, err := config.FromProperties(p, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, err = pipeline.New(ctx, cfg, append(tt.opts, pipeline.WithLogger(quietLogger()))...)
			if err == nil || !strings.Contains(err.Error(), tt.wants) {
				t.Fatalf("New: %v, want an error about %q", err, tt.wants)
			}
		})
	}
}

// A router hook that adds a handler under a taken name makes New fail
// instead of panicking.
func TestRouterHookNameClashIsAnError(t *testing.T) {
	pair := embedded.Start(t)
	cfg := embeddedConfig(t, pair, map[string]string{"sync.group.offsets.enabled": "false"})
	ps := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	defer ps.Close()
	_, err := pipeline.New(t.Context(), cfg, pipeline.WithLogger(quietLogger()),
		pipeline.WithTranslateRouter(func(r *message.Router) {
			r.AddConsumerHandler("translate_commits", "t", ps, func(*message.Message) error { return nil })
		}))
	if err == nil || !strings.Contains(err.Error(), "translate router hook") {
		t.Fatalf("New: %v, want the duplicate name as an error", err)
	}
}

func TestConsumerGroupsNamesHandlerGroups(t *testing.T) {
	cfg, _, err := config.FromProperties(map[string]string{
		"source.cluster.alias": "source", "target.cluster.alias": "target",
		"source.cluster.bootstrap.servers": "127.0.0.1:1", "target.cluster.bootstrap.servers": "127.0.0.1:1",
		"checkpointd.group.id": "cpd", "checkpointd.commit.source": "admin-poll",
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	groups := pipeline.ConsumerGroups(cfg, pipeline.WithCheckpointHandler("audit", func(*message.Message) error { return nil }),
		pipeline.WithEventHandler(events.AddNoPublisherHandler("typed", func(context.Context, event.CheckpointDecided) error { return nil })))
	var names []string
	for _, g := range groups {
		names = append(names, g.Name+"@"+g.Cluster)
	}
	if got, want := strings.Join(names, ","), "cpd@target,cpd-handler-audit@target"; got != want {
		t.Fatalf("consumer groups %s, want %s (typed handlers join none)", got, want)
	}
}
