package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// shortSession is how long a group session must last for its end to count
// as a normal rebalance rather than a failure to pace with backoff.
const shortSession = 2 * time.Second

// shardedSubscription is one ShardedReader.Subscribe: a member of the group
// consuming one topic.
type shardedSubscription struct {
	cfg    *ShardedReaderConfig
	sarama *sarama.Config
	topic  string
	out    chan<- *message.Message
	log    *slog.Logger
	client sarama.Client
	// fenceClient is Verify's: see run.
	fenceClient sarama.Client
	fails       failureLog // the group's failures, logged once per change
	member      *memberSlot
	parts       *atomic.Int32

	// claims is the partitions the handlers were told are assigned here
	// (see announce).
	claimsMu sync.Mutex
	claims   map[int32]*claimState
}

// claimState is a partition the handlers hear of as assigned here.
type claimState struct {
	announced chan struct{} // closed once its Assigned was acked, or given up
	acked     bool          // the handlers have its Assigned
	started   bool          // its own claim runs
}

func (s *shardedSubscription) run(ctx context.Context) {
	s.client = connect(ctx, &s.cfg.ReaderConfig, s.sarama, s.log)
	if s.client == nil {
		return
	}
	defer s.client.Close()
	if awaitTopic(ctx, &s.cfg.ReaderConfig, s.client, s.topic, s.log) == nil {
		return
	}
	// Verify asks the coordinator over a client of its own: Kafka answers
	// one request per connection at a time, so on the group's client a
	// DescribeGroups waits behind the fetch long-poll in flight to the
	// same broker (up to fetch.max.wait.ms), and the writes it fences with
	// it. Java's consumer keeps its coordinator connection apart too.
	s.fenceClient = connect(ctx, &s.cfg.ReaderConfig, s.sarama, s.log)
	if s.fenceClient == nil {
		return
	}
	defer s.fenceClient.Close()
	group, err := sarama.NewConsumerGroupFromClient(s.cfg.GroupID, s.client)
	if err != nil {
		s.log.Error("cannot make consumer group", "error", err)
		return
	}
	defer func() {
		if err := group.Close(); err != nil {
			s.log.Warn("leaving consumer group", "error", err)
		}
	}()
	go func() {
		for err := range group.Errors() {
			s.fails.failed(s.log, "consumer group error", err)
			s.cfg.Observer.ReadFailed(s.topic, fmt.Errorf("consumer group %s: %w", s.cfg.GroupID, err))
		}
	}()

	// watermill#691: a subscriber that calls Consume again at once after it
	// fails spins hot while a topic is gone or an ACL is missing.
	bo := newBackoff(s.cfg.RetryBackoff, s.cfg.MaxRetryBackoff)
	handler := claimHandler{s}
	for {
		began := time.Now()
		err := group.Consume(ctx, []string{s.topic}, handler)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && time.Since(began) >= shortSession:
			bo.Reset() // a rebalance: join again at once
			continue
		case err == nil:
		case errors.Is(err, sarama.ErrUnknownTopicOrPartition):
			if awaitTopic(ctx, &s.cfg.ReaderConfig, s.client, s.topic, s.log) == nil {
				return
			}
		default:
			s.fails.failed(s.log, "consumer group session failed", err)
			s.cfg.Observer.ReadFailed(s.topic, fmt.Errorf("consumer group %s: %w", s.cfg.GroupID, err))
		}
		if !pause(ctx, bo) {
			return
		}
	}
}

// claimHandler is the sarama.ConsumerGroupHandler of a subscription.
type claimHandler struct{ s *shardedSubscription }

func (h claimHandler) Setup(sess sarama.ConsumerGroupSession) error {
	h.s.fails.ok(h.s.log, "") // the line below says it
	h.s.log.Info("joined consumer group", "generation", sess.GenerationID(), "partitions", sess.Claims()[h.s.topic])
	h.s.cfg.Observer.ReadReady(h.s.topic)
	if parts, err := h.s.client.Partitions(h.s.topic); err == nil {
		h.s.parts.Store(int32(len(parts)))
	}
	h.s.member.Store(&membership{client: h.s.fenceClient, topic: h.s.topic, memberID: sess.MemberID(), generation: sess.GenerationID()})
	return nil
}

func (h claimHandler) Cleanup(sess sarama.ConsumerGroupSession) error {
	h.s.member.Store(nil)
	// Announced partitions whose claims never ran: the session that gave
	// them is over.
	h.s.revokeUnstarted(nil, h.s.log.With("generation", sess.GenerationID()))
	return nil
}

func (h claimHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	return h.s.consumeClaim(sess, claim)
}

// consumeClaim runs one claim: Assigned, the replay from the oldest offset,
// CaughtUp, the tail, and Revoked when the claim ends.
func (s *shardedSubscription) consumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	ctx := sess.Context()
	p := claim.Partition()
	log := s.log.With("partition", p, "generation", sess.GenerationID())
	out := &partitionOut{out: s.out, nackDelay: s.cfg.NackResendDelay}

	if !s.announce(ctx, sess, p, out, log) {
		if out.inflight != nil { // the handler has it: it must hear of the end too
			s.revoke(out, p, log)
		}
		s.forget(p)
		return nil
	}
	defer s.revoke(out, p, log)

	start, end, ok := s.claimBounds(ctx, p, log)
	if !ok {
		return nil
	}
	began := time.Now()
	r := &partitionReader{
		topic:     s.topic,
		partition: p,
		cfg:       &s.cfg.ReaderConfig,
		out:       out,
		probe:     tailProbe{client: s.client},
		log:       log,
		next:      start,
		end:       end,
	}
	r.onCaughtUp = func(ctx context.Context) error {
		if err := out.deliver(ctx, controlMessage(ctx, envelope.CaughtUp, s.topic, p)); err != nil {
			return err
		}
		log.Debug("partition caught up", "took", time.Since(began).Round(time.Millisecond))
		return nil
	}

	if committed := claim.InitialOffset(); committed > start {
		if err := s.backfill(ctx, r, committed, log); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err // ends the session; the next one replays again
		}
	}
	if _, err := r.read(ctx, source{msgs: claim.Messages(), hwm: claim.HighWaterMarkOffset}, -1); err == nil && ctx.Err() == nil {
		// sarama closes a claim's messages with the session still on when a
		// cooperative rebalance revokes the partition: the normal case. A
		// consumer that stopped on an error (offset out of range) has
		// reported it through the group's errors, which are logged.
		log.Debug("partition claim ended: revoked by a rebalance, or its consumer stopped")
	}
	return nil
}

// claimBounds returns the partition's oldest offset and the end offset the
// replay must reach before CaughtUp, retrying until it has them or ctx ends.
func (s *shardedSubscription) claimBounds(ctx context.Context, p int32, log *slog.Logger) (start, end int64, ok bool) {
	bo := newBackoff(s.cfg.RetryBackoff, s.cfg.MaxRetryBackoff)
	for {
		starts, err := listOffsets(s.client, s.topic, []int32{p}, sarama.OffsetOldest)
		if err == nil {
			var ends map[int32]int64
			if ends, err = listOffsets(s.client, s.topic, []int32{p}, sarama.OffsetNewest); err == nil {
				return starts[p], ends[p], true
			}
		}
		log.Warn("cannot list the partition's offsets", "error", err)
		s.cfg.Observer.ReadFailed(s.topic, fmt.Errorf("list offsets of partition %d: %w", p, err))
		if !pause(ctx, bo) {
			return 0, 0, false
		}
	}
}

// backfill delivers the records below the offset sarama starts the claim at.
// sarama starts a claim at the group's committed offset; this reader never
// commits, so one is there only if something else committed for the group.
func (s *shardedSubscription) backfill(ctx context.Context, r *partitionReader, committed int64, log *slog.Logger) error {
	log.Warn("the group has a committed offset, which this reader ignores: replaying from the oldest offset", "committed", committed)
	consumer, err := sarama.NewConsumerFromClient(s.client)
	if err != nil {
		return fmt.Errorf("backfill consumer: %w", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(s.topic, r.partition, sarama.OffsetOldest)
	if err != nil {
		return fmt.Errorf("backfill partition %d: %w", r.partition, err)
	}
	defer pc.Close()
	if _, err := r.read(ctx, source{msgs: pc.Messages(), errs: pc.Errors(), hwm: pc.HighWaterMarkOffset}, committed); err != nil {
		return err
	}
	if r.next < committed {
		return fmt.Errorf("backfill partition %d: consumer stopped at offset %d, before %d", r.partition, r.next, committed)
	}
	return nil
}

// announce tells the handlers, before the claim of p reads anything, that p
// is assigned here, and reports whether they have it.
//
// The first claim of a rebalance to start tells them of every partition
// the rebalance adds at once, not only its own: sarama starts each claim
// after its own round trips, tens of milliseconds apart under load, and a
// new owner restores all of a hand-over's shards in one read of the
// checkpoints topic, which then starts without waiting for the last claim.
// A claim whose partition was announced so waits for that announcement
// instead of making its own. A partition announced whose claim never
// starts is revoked again: when a later claim finds it no longer in the
// session's claims, or when the session ends.
func (s *shardedSubscription) announce(ctx context.Context, sess sarama.ConsumerGroupSession, p int32, out *partitionOut, log *slog.Logger) bool {
	s.claimsMu.Lock()
	if s.claims == nil {
		s.claims = make(map[int32]*claimState)
	}
	if st := s.claims[p]; st != nil {
		st.started = true
		s.claimsMu.Unlock()
		select {
		case <-st.announced:
		case <-ctx.Done():
			return false
		}
		if st.acked {
			return true
		}
		// The claim that announced it gave up: announce it here.
		s.claimsMu.Lock()
		s.claims[p] = &claimState{announced: make(chan struct{}), started: true}
		s.claimsMu.Unlock()
		return s.deliverAssigned(ctx, p, out, log)
	}
	claimed := sess.Claims()[s.topic]
	s.claims[p] = &claimState{announced: make(chan struct{}), started: true}
	var others []int32
	for _, q := range claimed {
		if s.claims[q] == nil {
			s.claims[q] = &claimState{announced: make(chan struct{})}
			others = append(others, q)
		}
	}
	s.claimsMu.Unlock()
	s.revokeUnstarted(claimed, log)
	ok := s.deliverAssigned(ctx, p, out, log)
	for _, q := range others {
		if !ok {
			s.giveUp(q)
			continue
		}
		qo := &partitionOut{out: s.out, nackDelay: s.cfg.NackResendDelay}
		if ok = s.deliverAssigned(ctx, q, qo, log.With("announced_partition", q)); !ok && qo.inflight != nil {
			s.revoke(qo, q, log)
		}
	}
	return s.claimAcked(p)
}

// deliverAssigned delivers Assigned for p over out and records the outcome.
func (s *shardedSubscription) deliverAssigned(ctx context.Context, p int32, out *partitionOut, log *slog.Logger) bool {
	err := out.deliver(ctx, controlMessage(ctx, envelope.Assigned, s.topic, p))
	s.claimsMu.Lock()
	st := s.claims[p]
	switch {
	case st == nil:
	case err == nil:
		st.acked = true
	case !st.started:
		delete(s.claims, p) // its own claim, if it starts, announces it
	}
	s.claimsMu.Unlock()
	if st != nil {
		close(st.announced)
	}
	if err == nil {
		log.Debug("partition assigned", "assigned_partition", p)
	}
	return err == nil
}

// giveUp drops the announcement of p that was not made: its own claim, if
// it starts, makes it.
func (s *shardedSubscription) giveUp(p int32) {
	s.claimsMu.Lock()
	st := s.claims[p]
	if st != nil && !st.started {
		delete(s.claims, p)
	}
	s.claimsMu.Unlock()
	if st != nil {
		close(st.announced)
	}
}

func (s *shardedSubscription) claimAcked(p int32) bool {
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	st := s.claims[p]
	return st != nil && st.acked
}

// forget drops p from the announced partitions once its claim is over.
func (s *shardedSubscription) forget(p int32) {
	s.claimsMu.Lock()
	delete(s.claims, p)
	s.claimsMu.Unlock()
}

// revokeUnstarted revokes the partitions that were announced, whose claims
// never started and that are not in claimed (all of them with nil).
func (s *shardedSubscription) revokeUnstarted(claimed []int32, log *slog.Logger) {
	s.claimsMu.Lock()
	var gone []int32
	for q, st := range s.claims {
		if !st.started && st.acked && !slices.Contains(claimed, q) {
			gone = append(gone, q)
			delete(s.claims, q)
		}
	}
	s.claimsMu.Unlock()
	for _, q := range gone {
		log.Debug("announced partition never claimed: revoking it", "revoked_partition", q)
		s.revoke(&partitionOut{out: s.out, nackDelay: s.cfg.NackResendDelay}, q, log)
	}
}

// revoke tells the handler the partition is gone and waits, up to
// RevokeTimeout, for it to ack. It does so on Close too: a Watermill router
// closes its subscribers while its handlers still read.
func (s *shardedSubscription) revoke(out *partitionOut, p int32, log *slog.Logger) {
	defer s.forget(p)
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RevokeTimeout)
	defer cancel()
	// The record in flight, if any, first: Revoked must not overtake it.
	if !out.settle(ctx) {
		log.Warn("handler did not settle the last record in time; letting the partition go", "timeout", s.cfg.RevokeTimeout)
		return
	}
	if err := out.deliver(ctx, controlMessage(ctx, envelope.Revoked, s.topic, p)); err != nil {
		log.Warn("handler did not ack Revoked in time; letting the partition go", "timeout", s.cfg.RevokeTimeout, "error", err)
		return
	}
	log.Debug("partition revoked")
}
