package events_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/event"
)

// A handler for checkpoint decisions, registered with
// pipeline.WithEventHandler.
func ExampleAddNoPublisherHandler() {
	h := events.AddNoPublisherHandler("skips", func(_ context.Context, d event.CheckpointDecided) error {
		if !d.Emitted {
			fmt.Println(d.Group, d.Reason)
		}
		return nil
	})
	b, _ := events.New(events.Config{}, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	b.Publish(event.CheckpointDecided{Group: "app", Reason: messages.SkipBehindOldestSync})
	for b.Stats()[0].Handled == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	// Output: app behind_oldest_sync
}

// Forwarding checkpoint writes to a Watermill publisher as JSON.
func ExampleForward() {
	pubSub := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 1}, watermill.NopLogger{})
	out, _ := pubSub.Subscribe(context.Background(), "checkpointd.events")
	b, _ := events.New(events.Config{}, events.Forward("forward", "checkpointd.events", pubSub, nil, event.KindCheckpointWritten))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx)
	b.Publish(event.CheckpointWritten{Group: "app", Topic: "source.orders", UpstreamOffset: 10, DownstreamOffset: 6})
	msg := <-out
	fmt.Println(msg.Metadata.Get(events.MetaKind), string(msg.Payload))
	// Output: checkpoint_written {"group":"app","topic":"source.orders","partition":0,"upstream_offset":10,"downstream_offset":6}
}
