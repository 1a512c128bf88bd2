package handlers

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// partialPublisher acknowledges, on its first call, only the messages keep
// lets through and fails the others with an error that lists them (as
// kafkalog's publisher does); later calls write everything. It records
// every record that landed, as the topic would hold them.
type partialPublisher struct {
	keep   func(i int) bool
	calls  int
	landed []messages.Checkpoint
	sizes  []int // messages per call
}

type unwrittenErr struct{ msgs []*message.Message }

func (e unwrittenErr) Error() string                 { return "some records failed: circuit breaker is open" }
func (e unwrittenErr) Unwritten() []*message.Message { return e.msgs }

func (p *partialPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.calls++
	p.sizes = append(p.sizes, len(msgs))
	var failed []*message.Message
	for i, m := range msgs {
		if p.calls == 1 && !p.keep(i) {
			failed = append(failed, m)
			continue
		}
		cp, err := messages.DecodeCheckpoint([]byte(m.Metadata.Get(envelope.MetaKey)), m.Payload)
		if err != nil {
			panic(err)
		}
		p.landed = append(p.landed, cp)
	}
	if len(failed) > 0 {
		return unwrittenErr{failed}
	}
	return nil
}

func (p *partialPublisher) Close() error { return nil }

// A batch that half-failed is not written again whole: only what did not
// land goes out again, so each checkpoint is written once and the published
// count matches the records on the topic. An error that does not say which
// records failed still retries the whole batch.
func TestOutboxRetriesOnlyUnwritten(t *testing.T) {
	for _, tc := range []struct {
		name        string
		keep        func(i int) bool
		wantSecond  int // messages in the retry
		wantWritten int // records on the topic
	}{
		{"half landed", func(i int) bool { return i%2 == 0 }, 50, 100},
		{"none landed", func(int) bool { return false }, 100, 100},
		{"all but one landed", func(i int) bool { return i != 99 }, 1, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := &partialPublisher{keep: tc.keep}
			o := NewOutbox(pub, "cps", 100, slog.New(slog.DiscardHandler))
			o.backoff = time.Millisecond
			for g := range 100 {
				o.Emit(context.Background(), cpOn("g"+string(rune('A'+g%26))+string(rune('a'+g/26)), 0, 5, 5), time.Time{})
			}
			o.publish(context.Background(), o.take())
			if len(pub.sizes) != 2 || pub.sizes[0] != 100 || pub.sizes[1] != tc.wantSecond {
				t.Fatalf("calls of sizes %v, want [100 %d]", pub.sizes, tc.wantSecond)
			}
			st := o.Stats()
			if len(pub.landed) != tc.wantWritten || st.Published != int64(len(pub.landed)) {
				t.Errorf("%d records on the topic, %d counted published; want %d of each", len(pub.landed), st.Published, tc.wantWritten)
			}
			seen := map[messages.Checkpoint]int{}
			for _, cp := range pub.landed {
				if seen[cp]++; seen[cp] > 1 {
					t.Errorf("%v written %d times", cp, seen[cp])
				}
			}
		})
	}

	// An error without the list: the whole batch again.
	calls := 0
	var sizes []int
	pub := publisherFunc(func(msgs []*message.Message) error {
		calls++
		sizes = append(sizes, len(msgs))
		if calls == 1 {
			return errors.New("broker down")
		}
		return nil
	})
	o := NewOutbox(pub, "cps", 10, slog.New(slog.DiscardHandler))
	o.backoff = time.Millisecond
	for g := range 10 {
		o.Emit(context.Background(), cpOn("g"+string(rune('a'+g)), 0, 5, 5), time.Time{})
	}
	o.publish(context.Background(), o.take())
	if len(sizes) != 2 || sizes[1] != 10 || o.Stats().Published != 10 {
		t.Errorf("calls of sizes %v, published %d; want [10 10], 10", sizes, o.Stats().Published)
	}
}

type publisherFunc func([]*message.Message) error

func (f publisherFunc) Publish(_ string, msgs ...*message.Message) error { return f(msgs) }
func (f publisherFunc) Close() error                                     { return nil }
