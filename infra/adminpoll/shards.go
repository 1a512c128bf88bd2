package adminpoll

import (
	"context"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// releaseTimeout bounds how long a revoked shard waits for the poller to
// stop delivering its groups before the shard reader lets it go.
const releaseTimeout = 10 * time.Second

// Shards is which shards of source groups this instance polls, when several
// instances share the work: a consumer group over a topic with one partition
// per shard (Handle takes its reader's control messages) assigns them, and a
// group belongs to shard Of(group). The Subscriber polls and delivers only
// the owned shards' groups, each record in its shard's partition, with
// Assigned, CaughtUp and Revoked per shard like a __consumer_offsets reader.
type Shards struct {
	of func(group string) int32

	mu       sync.Mutex
	owned    map[int32]bool
	released map[int32]chan struct{} // closed when the poller stopped delivering the shard
	changed  chan struct{}
	stopped  bool // the poller ended: nothing is delivered, nothing to wait for
}

// NewShards makes an empty ownership over the shards of.
func NewShards(of func(group string) int32) *Shards {
	return &Shards{of: of, owned: make(map[int32]bool), released: make(map[int32]chan struct{}),
		changed: make(chan struct{}, 1)}
}

// Handle is the Watermill handler of the shard reader: Assigned and Revoked
// move shards; Revoked returns once the poller has delivered the shard's
// Revoked (or after releaseTimeout), so that the new owner starts only when
// this one has stopped.
func (s *Shards) Handle(msg *message.Message) error {
	ctl, _, p, ok := envelope.ControlOf(msg)
	if !ok {
		return nil // the topic holds no records
	}
	switch ctl {
	case envelope.Assigned:
		s.mu.Lock()
		s.owned[p] = true
		delete(s.released, p)
		s.mu.Unlock()
		s.poke()
	case envelope.Revoked:
		s.mu.Lock()
		delete(s.owned, p)
		if s.stopped {
			s.mu.Unlock()
			return nil
		}
		done := make(chan struct{})
		s.released[p] = done
		s.mu.Unlock()
		s.poke()
		select {
		case <-done:
		case <-time.After(releaseTimeout):
		case <-msg.Context().Done():
		}
	}
	return nil
}

func (s *Shards) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// snapshot returns the shards owned now.
func (s *Shards) snapshot() map[int32]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]bool, len(s.owned))
	for p := range s.owned {
		out[p] = true
	}
	return out
}

// stop tells the waiting Handles, and later ones, that the poller ended.
func (s *Shards) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for p, done := range s.released {
		close(done)
		delete(s.released, p)
	}
}

// release tells a waiting Handle that the poller let shard p go.
func (s *Shards) release(p int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if done, ok := s.released[p]; ok {
		close(done)
		delete(s.released, p)
	}
}

// wait returns when ownership changes or after d, or with ctx's error.
func (s *Shards) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.changed:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
