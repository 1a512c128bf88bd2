package adminpoll

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// commitValueVersion is the OffsetCommitValue version of the records made:
// v3 carries the leader epoch and is what Kafka 2.1 to 4.0 write.
const commitValueVersion = 3

// errClosed ends delivery when the Subscriber is closed.
var errClosed = errors.New("admin poll subscriber closed")

// Subscriber is a Watermill subscriber over the source cluster's group
// offsets. On Subscribe it delivers an Assigned control message, then a
// record for every committed offset, then CaughtUp, then on every interval
// the commits that changed and a tombstone for every commit that vanished
// (its group was deleted, or its offsets expired or were deleted). Records
// have partition 0 and a sequence number as offset. One message is in flight
// at a time; a nacked one is sent again.
type Subscriber struct {
	cfg    Config
	poller *poller
	stats  statsRecorder

	closing   chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	closed    bool
	running   bool
	done      sync.WaitGroup
}

// New makes a Subscriber; nothing is read before Subscribe.
func New(cfg Config) (*Subscriber, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The admin borrows the client; closing it would close the client, so it
	// is never closed.
	admin, err := sarama.NewClusterAdminFromClient(cfg.Client)
	if err != nil {
		return nil, fmt.Errorf("admin poll: admin client: %w", err)
	}
	return &Subscriber{
		cfg:     cfg,
		poller:  &poller{client: cfg.Client, admin: admin, groups: cfg.Groups, batchSize: cfg.BatchSize},
		closing: make(chan struct{}),
	}, nil
}

// Subscribe starts polling. topic must be Topic, and there can be one
// subscription per Subscriber: the snapshot of what was delivered belongs to
// it. The channel closes when ctx ends or the Subscriber is closed.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if topic != Topic {
		return nil, fmt.Errorf("admin poll: subscribe to %q: the poller only serves topic %q", topic, Topic)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, errClosed
	case s.running:
		return nil, errors.New("admin poll: already subscribed; one subscription per subscriber")
	}
	s.running = true
	out := make(chan *message.Message)
	s.done.Go(func() {
		defer close(out)
		s.run(ctx, topic, out)
	})
	return out, nil
}

// Close stops polling and waits for the delivery loop to end. It does not
// close the sarama client.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.closing)
	})
	s.done.Wait()
	return nil
}

// Stats returns the poll counters so far.
func (s *Subscriber) Stats() Stats { return s.stats.snapshot() }

// run polls until ctx ends or the Subscriber is closed.
func (s *Subscriber) run(ctx context.Context, topic string, out chan<- *message.Message) {
	log := s.cfg.Logger.With("component", "admin-poll")
	shards := s.cfg.Shards
	if shards != nil {
		defer shards.stop() // a shard revoked at shutdown need not wait for it
	}
	if shards == nil && s.deliver(ctx, out, envelope.NewControl(envelope.Assigned, topic, 0)) != nil {
		return
	}
	told := make(snapshot)
	var failing failures
	var seq int64
	caughtUp := false
	// With shards: the shards delivered Assigned, and whether their CaughtUp
	// went out too.
	delivered := make(map[int32]bool)
	for {
		var owned map[int32]bool
		var keep func(string) bool
		if shards != nil {
			owned = shards.snapshot()
			if !s.moveShards(ctx, topic, out, owned, delivered, told) {
				return
			}
			keep = func(g string) bool { return owned[shards.of(g)] }
		}
		start := time.Now()
		res, listErr := s.poller.poll(ctx, keep)
		changes := diff(told, res)
		s.stats.polled(time.Since(start), len(res.offsets)+len(res.failed), len(res.failed), listErr != nil)
		log.Debug("admin poll", "duration", time.Since(start).Round(time.Millisecond),
			"groups", len(res.offsets)+len(res.failed), "failed_groups", len(res.failed), "changes", len(changes))
		failing.log(log, res, listErr)
		if s.cfg.OnPoll != nil {
			s.cfg.OnPoll(pollOutcome(res, listErr))
		}

		for _, ch := range changes {
			var partition int32
			if shards != nil {
				partition = shards.of(ch.Group)
			}
			msg, err := record(ch, partition, seq, start)
			if err != nil {
				log.Error("cannot encode commit as a __consumer_offsets record; skipped", "group", ch.Group, "partition", ch.TP.String(), "error", err)
				told.apply(ch) // it cannot be encoded next time either
				continue
			}
			if s.deliver(ctx, out, msg) != nil {
				return
			}
			seq++
			told.apply(ch)
			s.stats.delivered()
		}
		if shards != nil && res.complete {
			// Groups that failed this first poll come later, like new commits.
			for p, done := range delivered {
				if done {
					continue
				}
				if s.deliver(ctx, out, envelope.NewControl(envelope.CaughtUp, topic, p)) != nil {
					return
				}
				delivered[p] = true
			}
		}
		if shards == nil && !caughtUp && res.complete {
			// Groups that failed this first poll come later, like new commits.
			if s.deliver(ctx, out, envelope.NewControl(envelope.CaughtUp, topic, 0)) != nil {
				return
			}
			caughtUp = true
			log.Info("admin poll caught up", "groups", len(told), "failed_groups", len(res.failed),
				"duration", time.Since(start).Round(time.Millisecond))
		}
		wait := time.Until(start.Add(s.cfg.Interval))
		if shards != nil {
			if err := shards.wait(ctx, wait); err != nil {
				return
			}
			if s.sleep(ctx, 0) != nil {
				return
			}
			continue
		}
		if s.sleep(ctx, wait) != nil {
			return
		}
	}
}

// moveShards delivers Revoked for the shards no longer owned (forgetting
// what was told of their groups, and releasing them) and Assigned for the
// newly owned ones. It reports false when delivery stopped.
func (s *Subscriber) moveShards(ctx context.Context, topic string, out chan<- *message.Message,
	owned, delivered map[int32]bool, told snapshot) bool {
	shards := s.cfg.Shards
	for p := range delivered {
		if owned[p] {
			continue
		}
		if s.deliver(ctx, out, envelope.NewControl(envelope.Revoked, topic, p)) != nil {
			return false
		}
		delete(delivered, p)
		for g := range told {
			if shards.of(g) == p {
				delete(told, g)
			}
		}
		shards.release(p)
	}
	for p := range owned {
		if _, ok := delivered[p]; ok {
			continue
		}
		if s.deliver(ctx, out, envelope.NewControl(envelope.Assigned, topic, p)) != nil {
			return false
		}
		delivered[p] = false
	}
	return true
}

// record makes the __consumer_offsets-shaped message for a change.
func record(ch change, partition int32, seq int64, at time.Time) (*message.Message, error) {
	r := envelope.Record{
		Topic:     Topic,
		Partition: partition,
		Offset:    seq,
		Timestamp: at,
		Key:       messages.EncodeOffsetCommitKey(ch.Group, ch.TP),
	}
	if ch.Commit != nil {
		value, err := messages.EncodeOffsetCommitValue(commitValueVersion, messages.OffsetsRecord{
			Offset:          ch.Commit.Offset,
			LeaderEpoch:     ch.Commit.LeaderEpoch,
			Metadata:        ch.Commit.Metadata,
			CommitTimestamp: at.UnixMilli(), // OffsetFetch does not say when; this is when it was seen
		})
		if err != nil {
			return nil, err
		}
		r.Value = value
	}
	return envelope.FromRecord(r), nil
}

// deliver sends msg and waits for its ack, sending a copy again after each
// nack. It fails only when ctx ends or the Subscriber closes.
func (s *Subscriber) deliver(ctx context.Context, out chan<- *message.Message, msg *message.Message) error {
	for {
		attempt := msg.Copy()
		attempt.SetContext(ctx)
		select {
		case out <- attempt:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return errClosed
		}
		select {
		case <-attempt.Acked():
			return nil
		case <-attempt.Nacked():
			s.stats.nacked()
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return errClosed
		}
		if err := s.sleep(ctx, s.cfg.NackResendDelay); err != nil {
			return err
		}
	}
}

// sleep waits d, or until ctx ends or the Subscriber closes.
func (s *Subscriber) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return errClosed
		default:
			return nil
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return errClosed
	}
}

// pollOutcome is a poll's error for Config.OnPoll: a poll that read no
// group's offsets because listing or every fetch failed.
func pollOutcome(res pollResult, listErr error) error {
	if len(res.offsets) > 0 {
		return nil
	}
	if listErr != nil {
		return fmt.Errorf("listing groups: %w", listErr)
	}
	for g, err := range res.failed {
		err = kafkaerr.Needs(err, kafkaerr.Permission{Operation: "DESCRIBE", ResourceType: "group", Name: g})
		return fmt.Errorf("fetching offsets of group %q (and %d more): %w", g, len(res.failed)-1, err)
	}
	return nil
}
