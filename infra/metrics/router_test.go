package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// TestRouterMetrics runs a real router: a message the handler fails once is
// nacked, redelivered and acked; both calls are timed with their outcome.
func TestRouterMetrics(t *testing.T) {
	m := newTest(false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	m.AddRouter(router)
	calls := 0
	done := make(chan struct{})
	router.AddConsumerHandler("translate_commits", "in", in, func(*message.Message) error {
		calls++
		if calls == 1 {
			return errors.New("first try fails")
		}
		close(done)
		return nil
	})
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
	// The router acks after the middleware returns; the counters are set
	// before that, so they are final once the handler has run twice.
	for _, tc := range []struct {
		success string
		want    uint64
	}{{"true", 1}, {"false", 1}} {
		n, _ := histogram(t, m.reg, "checkpointd_router_handler_execution_time_seconds",
			map[string]string{"handler_name": "translate_commits", "success": tc.success})
		if n != tc.want {
			t.Errorf("handler_execution_time_seconds{success=%s} count = %d, want %d", tc.success, n, tc.want)
		}
	}
	for _, acked := range []string{"acked", "nacked"} {
		got := series(t, m.reg, "checkpointd_router_subscriber_messages_received_total",
			map[string]string{"handler_name": "translate_commits", "acked": acked}).GetCounter().GetValue()
		if got != 1 {
			t.Errorf("subscriber_messages_received_total{acked=%s} = %v, want 1", acked, got)
		}
	}
}
