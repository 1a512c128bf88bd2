package kafkalog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// fakeSession is the part of a sarama session announce reads.
type fakeSession struct {
	sarama.ConsumerGroupSession
	ctx    context.Context
	claims map[string][]int32
}

func (f fakeSession) Claims() map[string][]int32 { return f.claims }
func (f fakeSession) Context() context.Context   { return f.ctx }

// controlLog acks every message sent on its channel and keeps the control
// messages' kind and partition, in order.
type controlLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *controlLog) run(in <-chan *message.Message) {
	for msg := range in {
		if c, _, p, ok := envelope.ControlOf(msg); ok {
			l.mu.Lock()
			l.seen = append(l.seen, fmt.Sprintf("%s %d", c, p))
			l.mu.Unlock()
		}
		msg.Ack()
	}
}

func (l *controlLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// newAnnounceSubscription is a subscription whose messages log acks and
// keeps, until the test ends.
func newAnnounceSubscription(t *testing.T) (*shardedSubscription, chan *message.Message, *controlLog) {
	ch := make(chan *message.Message)
	t.Cleanup(func() { close(ch) })
	log := &controlLog{}
	go log.run(ch)
	return &shardedSubscription{
		cfg:   &ShardedReaderConfig{RevokeTimeout: time.Second},
		topic: "__consumer_offsets",
		out:   ch,
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, ch, log
}

// The first claim of a rebalance tells the handlers of every partition the
// rebalance adds; the later claims do not tell again, and a partition whose
// claim never starts is revoked when the session ends.
func TestFirstClaimAnnouncesTheRebalancesPartitions(t *testing.T) {
	s, ch, log := newAnnounceSubscription(t)
	sess := fakeSession{ctx: context.Background(), claims: map[string][]int32{s.topic: {4, 7, 9}}}
	announce := func(p int32) bool {
		return s.announce(sess.ctx, sess, p, &partitionOut{out: ch}, s.log)
	}

	if !announce(7) {
		t.Fatal("first claim: not announced")
	}
	if got, want := log.got(), []string{"assigned 7", "assigned 4", "assigned 9"}; !slices.Equal(got, want) {
		t.Fatalf("after the first claim: %v, want %v", got, want)
	}
	if !announce(4) {
		t.Fatal("second claim: not announced")
	}
	if got := log.got(); len(got) != 3 {
		t.Fatalf("the second claim told again: %v", got)
	}
	// Partition 9's claim never starts: the session's end revokes it, and
	// only it (4 and 7 are revoked by their own claims).
	s.revokeUnstarted(nil, s.log)
	if got, want := log.got(), []string{"assigned 7", "assigned 4", "assigned 9", "revoked 9"}; !slices.Equal(got, want) {
		t.Fatalf("after the session's end: %v, want %v", got, want)
	}
}

// A partition announced, whose claim never started, that a later rebalance
// no longer gives, is revoked when the next rebalance's first claim starts.
func TestAnnouncedPartitionGoneFromTheClaimsIsRevoked(t *testing.T) {
	s, ch, log := newAnnounceSubscription(t)
	first := fakeSession{ctx: context.Background(), claims: map[string][]int32{s.topic: {1, 2}}}
	if !s.announce(first.ctx, first, 1, &partitionOut{out: ch}, s.log) {
		t.Fatal("not announced")
	}
	next := fakeSession{ctx: context.Background(), claims: map[string][]int32{s.topic: {1, 5}}}
	if !s.announce(next.ctx, next, 5, &partitionOut{out: ch}, s.log) {
		t.Fatal("not announced")
	}
	if got, want := log.got(), []string{"assigned 1", "assigned 2", "revoked 2", "assigned 5"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
