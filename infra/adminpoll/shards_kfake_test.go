package adminpoll_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/adminpoll"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// TestFakePollSharded: with Shards, only the owned shards' groups are
// delivered, each in its shard's partition, with Assigned, CaughtUp and
// Revoked per shard, and a revoked shard's groups stop at once.
func TestFakePollSharded(t *testing.T) {
	client, _, commitOn := fakeSource(t, 1)
	commit := func(group string, offset int64) { t.Helper(); commitOn(group, 0, offset) }
	commit("g-a", 5)
	commit("g-b", 6)
	shardOf := map[string]int32{"g-a": 0, "g-b": 1}
	shards := adminpoll.NewShards(func(g string) int32 { return shardOf[g] })
	sub, err := adminpoll.New(adminpoll.Config{Client: client, Groups: prefix("g-"), Interval: 50 * time.Millisecond, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ch, err := sub.Subscribe(t.Context(), adminpoll.Topic)
	if err != nil {
		t.Fatal(err)
	}
	take := func() string {
		t.Helper()
		select {
		case msg := <-ch:
			msg.Ack()
			return shardEvent(t, msg)
		case <-time.After(30 * time.Second):
			t.Fatal("no message within 30s")
			return ""
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case msg := <-ch:
			msg.Ack()
			t.Fatalf("%s: got %s", what, shardEvent(t, msg))
		case <-time.After(300 * time.Millisecond):
		}
	}
	handle := func(c envelope.Control, p int32) {
		t.Helper()
		if err := shards.Handle(envelope.NewControl(c, "shards", p)); err != nil {
			t.Fatal(err)
		}
	}
	quiet("no shard owned")

	handle(envelope.Assigned, 0)
	for _, want := range []string{"assigned(0)", "g-a orders-0=5 in 0", "caught-up(0)"} {
		if got := take(); got != want {
			t.Fatalf("after shard 0 assigned: %s, want %s", got, want)
		}
	}
	handle(envelope.Assigned, 1)
	for _, want := range []string{"assigned(1)", "g-b orders-0=6 in 1", "caught-up(1)"} {
		if got := take(); got != want {
			t.Fatalf("after shard 1 assigned: %s, want %s", got, want)
		}
	}

	// Revoked returns once the poller has said so downstream.
	revoked := make(chan struct{})
	go func() {
		defer close(revoked)
		_ = shards.Handle(envelope.NewControl(envelope.Revoked, "shards", 0))
	}()
	if got := take(); got != "revoked(0)" {
		t.Fatalf("after shard 0 revoked: %s, want revoked(0)", got)
	}
	select {
	case <-revoked:
	case <-time.After(10 * time.Second):
		t.Fatal("Handle(Revoked) did not return after the poller delivered Revoked")
	}
	commit("g-a", 9)
	commit("g-b", 10)
	if got := take(); got != "g-b orders-0=10 in 1" {
		t.Fatalf("after commits to both groups: %s, want only g-b's", got)
	}
	quiet("g-a's commit after its shard was revoked")
}

func shardEvent(t *testing.T, msg *message.Message) string {
	t.Helper()
	if c, _, p, ok := envelope.ControlOf(msg); ok {
		return fmt.Sprintf("%s(%d)", c, p)
	}
	rec, err := envelope.ToRecord(msg)
	if err != nil {
		t.Fatal(err)
	}
	or, err := messages.DecodeOffsetsRecord(rec.Key, rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %s=%d in %d", or.Group, or.TopicPartition, or.Offset, rec.Partition)
}

// Once the poller has ended (shutdown), a revoked shard does not wait for
// it: the shard reader lets its partitions go at once.
func TestShardsRevokeAfterThePollerEnded(t *testing.T) {
	client, _, _ := fakeSource(t, 1)
	shards := adminpoll.NewShards(func(string) int32 { return 0 })
	sub, err := adminpoll.New(adminpoll.Config{Client: client, Interval: 50 * time.Millisecond, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := sub.Subscribe(ctx, adminpoll.Topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := shards.Handle(envelope.NewControl(envelope.Assigned, "shards", 0)); err != nil {
		t.Fatal(err)
	}
	if msg := <-ch; msg != nil {
		msg.Ack() // assigned(0)
	}
	cancel()
	for range ch { // drained: the poller ended
	}
	start := time.Now()
	if err := shards.Handle(envelope.NewControl(envelope.Revoked, "shards", 0)); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("Revoked after the poller ended waited %v", waited)
	}
}
