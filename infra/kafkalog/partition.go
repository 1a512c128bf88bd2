package kafkalog

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
)

// source is a stream of one partition's records.
type source struct {
	msgs <-chan *sarama.ConsumerMessage
	// errs is nil when someone else drains the errors, as a consumer group does.
	errs <-chan *sarama.ConsumerError
	hwm  func() int64
}

// partitionReader delivers one partition's records in offset order and tells
// when it has caught up with the end offset the partition had when reading
// began. Both readers drive one per partition they read.
type partitionReader struct {
	topic     string
	partition int32
	cfg       *ReaderConfig
	out       *partitionOut
	probe     tailProbe
	log       *slog.Logger

	next     int64 // offset after the last record delivered or dropped
	end      int64 // the records below end existed when reading began
	caughtUp bool
	// onCaughtUp signals the handlers, once, when next reaches end.
	onCaughtUp func(context.Context) error
}

// read delivers records from src until src closes, ctx ends or, when
// stopAt >= 0, every record below stopAt has been delivered. It reports
// whether the source gave up because its offset went out of range.
func (r *partitionReader) read(ctx context.Context, src source, stopAt int64) (outOfRange bool, err error) {
	probe := time.NewTimer(r.cfg.ProbeInterval)
	defer probe.Stop()
	for {
		if err := r.checkCaughtUp(ctx); err != nil {
			return outOfRange, err
		}
		if stopAt >= 0 && r.next >= stopAt {
			return outOfRange, nil
		}
		probeC := probe.C
		if r.caughtUp && stopAt < 0 {
			probeC = nil // nothing to wait for but new records
		}
		select {
		case m, ok := <-src.msgs:
			if !ok {
				if src.errs != nil {
					for cerr := range src.errs { // sarama closes errs after msgs
						outOfRange = r.consumerError(cerr) || outOfRange
					}
				}
				return outOfRange, nil
			}
			if m.Offset < r.next {
				continue // delivered already, before a switch of source
			}
			if err := r.deliverRecord(ctx, m, src.hwm); err != nil {
				return outOfRange, err
			}
			probe.Reset(r.cfg.ProbeInterval)
		case cerr, ok := <-src.errs:
			if !ok {
				src.errs = nil
				continue
			}
			outOfRange = r.consumerError(cerr) || outOfRange
		case <-probeC:
			r.probeTail(stopAt)
			probe.Reset(r.cfg.ProbeInterval)
		case <-ctx.Done():
			return outOfRange, context.Cause(ctx)
		}
	}
}

func (r *partitionReader) deliverRecord(ctx context.Context, m *sarama.ConsumerMessage, hwm func() int64) error {
	if r.cfg.Filter == nil || r.cfg.Filter(m) {
		if err := r.out.deliver(ctx, recordMessage(ctx, m)); err != nil {
			return err
		}
	}
	r.next = m.Offset + 1
	if r.cfg.Hooks.OnRecord != nil {
		r.cfg.Hooks.OnRecord(m.Topic, m.Partition, m.Offset, hwm())
	}
	return nil
}

func (r *partitionReader) checkCaughtUp(ctx context.Context) error {
	if r.caughtUp || r.next < r.end {
		return nil
	}
	r.caughtUp = true // once only, even if the signal is cut short by ctx
	return r.onCaughtUp(ctx)
}

// probeTail asks the broker whether anything deliverable is left below the
// offsets the reader waits for, and moves next past what is not.
func (r *partitionReader) probeTail(stopAt int64) {
	limit := stopAt
	if !r.caughtUp {
		limit = max(limit, r.end)
	}
	if r.next >= limit {
		return
	}
	first, err := r.probe.firstDeliverable(r.topic, r.partition, r.next, limit)
	if err != nil {
		r.log.Debug("probe of partition tail failed", "partition", r.partition, "offset", r.next, "error", err)
		return
	}
	if first > r.next {
		r.log.Debug("skipped offsets without deliverable records", "partition", r.partition, "from", r.next, "to", first)
		r.next = first
	}
}

// consumerError logs an error of the partition consumer and reports whether
// it is an offset out of range, after which sarama stops the consumer.
func (r *partitionReader) consumerError(cerr *sarama.ConsumerError) bool {
	if errors.Is(cerr.Err, sarama.ErrOffsetOutOfRange) {
		return true
	}
	r.log.Warn("partition consumer error", "partition", r.partition, "error", cerr.Err)
	return false
}
