package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// logSubscription is one LogReader.Subscribe: every partition of one topic.
type logSubscription struct {
	cfg    *LogReaderConfig
	sarama *sarama.Config
	topic  string
	out    chan<- *message.Message
	log    *slog.Logger
}

func (s *logSubscription) run(ctx context.Context) {
	client := connect(ctx, &s.cfg.ReaderConfig, s.sarama, s.log)
	if client == nil {
		return
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil { // only on a closed client
		s.log.Error("cannot make consumer", "error", err)
		return
	}
	defer consumer.Close()

	partitions := awaitTopic(ctx, &s.cfg.ReaderConfig, client, s.topic, s.log)
	if partitions == nil {
		return
	}
	starts, ends, ok := s.bounds(ctx, client, partitions)
	if !ok {
		return
	}

	catchUp := &topicCatchUp{topic: s.topic, started: time.Now(), log: s.log}
	for _, p := range partitions {
		if ends[p] > starts[p] {
			catchUp.remaining++
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if catchUp.remaining == 0 {
		// Nothing to replay: say so at once, on a channel of its own.
		out := &partitionOut{out: s.out, nackDelay: s.cfg.NackResendDelay}
		catchUp.remaining = 1
		wg.Go(func() { _ = catchUp.partitionDone(ctx, out) })
	}
	known := make(map[int32]bool, len(partitions))
	for _, p := range partitions {
		known[p] = true
		r := s.partitionReader(client, p, starts[p], ends[p], catchUp)
		wg.Go(func() { s.readPartition(ctx, consumer, r) })
	}

	ticker := time.NewTicker(s.cfg.PartitionRefresh)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		current, err := topicPartitions(client, s.topic)
		if err != nil {
			s.log.Warn("cannot refresh topic partitions", "error", err)
			s.cfg.Observer.ReadFailed(s.topic, fmt.Errorf("topic %s metadata: %w", s.topic, err))
			continue
		}
		for _, p := range current {
			if known[p] {
				continue
			}
			known[p] = true
			s.log.Info("new partition", "partition", p)
			// Its records are all new: nothing for CaughtUp to wait on.
			r := s.partitionReader(client, p, 0, 0, nil)
			wg.Go(func() { s.readPartition(ctx, consumer, r) })
		}
	}
}

// bounds returns the oldest and end offsets the partitions have now,
// retrying until it has them or ctx ends.
func (s *logSubscription) bounds(ctx context.Context, client sarama.Client, partitions []int32) (starts, ends map[int32]int64, ok bool) {
	bo := newBackoff(s.cfg.RetryBackoff, s.cfg.MaxRetryBackoff)
	for {
		var err error
		if starts, err = listOffsets(client, s.topic, partitions, sarama.OffsetOldest); err == nil {
			if ends, err = listOffsets(client, s.topic, partitions, sarama.OffsetNewest); err == nil {
				return starts, ends, true
			}
		}
		s.log.Warn("cannot list partition offsets", "error", err)
		s.cfg.Observer.ReadFailed(s.topic, fmt.Errorf("list offsets: %w", err))
		if !pause(ctx, bo) {
			return nil, nil, false
		}
	}
}

func (s *logSubscription) partitionReader(client sarama.Client, p int32, start, end int64, catchUp *topicCatchUp) *partitionReader {
	r := &partitionReader{
		topic:     s.topic,
		partition: p,
		cfg:       &s.cfg.ReaderConfig,
		out:       &partitionOut{out: s.out, nackDelay: s.cfg.NackResendDelay},
		probe:     tailProbe{client: client},
		log:       s.log,
		next:      start,
		end:       end,
		caughtUp:  end <= start,
	}
	r.onCaughtUp = func(ctx context.Context) error { return catchUp.partitionDone(ctx, r.out) }
	return r
}

// readPartition reads one partition from its oldest offset until ctx ends,
// starting its consumer again wherever sarama gives up.
func (s *logSubscription) readPartition(ctx context.Context, consumer sarama.Consumer, r *partitionReader) {
	log := s.log.With("partition", r.partition)
	bo := newBackoff(s.cfg.RetryBackoff, s.cfg.MaxRetryBackoff)
	offset := sarama.OffsetOldest
	for {
		pc, err := consumer.ConsumePartition(s.topic, r.partition, offset)
		if errors.Is(err, sarama.ErrOffsetOutOfRange) {
			log.Warn("offset out of range (deleted by retention?), reading again from the oldest offset", "offset", offset)
			offset = sarama.OffsetOldest
			continue
		}
		if err != nil {
			log.Warn("cannot consume partition", "offset", offset, "error", err)
			s.cfg.Observer.ReadFailed(s.topic, fmt.Errorf("consume partition %d: %w", r.partition, err))
			if !pause(ctx, bo) {
				return
			}
			continue
		}
		bo.Reset()
		outOfRange, err := r.read(ctx, source{msgs: pc.Messages(), errs: pc.Errors(), hwm: pc.HighWaterMarkOffset}, -1)
		_ = pc.Close()
		if err != nil {
			return // ctx ended
		}
		if outOfRange {
			log.Warn("offset out of range (deleted by retention?), reading again from the oldest offset", "offset", r.next)
			offset = sarama.OffsetOldest
		} else {
			log.Warn("partition consumer stopped, starting it again", "offset", r.next)
			offset = r.next
		}
		if !pause(ctx, bo) {
			return
		}
	}
}

// topicCatchUp sends a topic's one CaughtUp once the last partition that had
// records when reading began has delivered them.
type topicCatchUp struct {
	topic   string
	started time.Time
	log     *slog.Logger

	mu        sync.Mutex
	remaining int
}

func (c *topicCatchUp) partitionDone(ctx context.Context, out *partitionOut) error {
	c.mu.Lock()
	c.remaining--
	last := c.remaining == 0
	c.mu.Unlock()
	if !last {
		return nil
	}
	if err := out.deliver(ctx, controlMessage(ctx, envelope.CaughtUp, c.topic, -1)); err != nil {
		return err
	}
	c.log.Info("caught up", "took", time.Since(c.started).Round(time.Millisecond))
	return nil
}
