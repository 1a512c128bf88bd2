package kafkalog

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages/envelope"
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

	batch []*sarama.ConsumerMessage // reused by deliverFrom
	recs  []envelope.Record         // reused by recordsMessage
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
			if err := r.deliverFrom(ctx, m, src, stopAt); err != nil {
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

// deliverFrom delivers m and, with BatchRecords, the records src already
// holds after it, in one message, exactly as if they were delivered one by
// one: the message ends where a record-by-record reader would stop to say
// CaughtUp or reach stopAt, and a record Solo picks goes on its own.
func (r *partitionReader) deliverFrom(ctx context.Context, m *sarama.ConsumerMessage, src source, stopAt int64) error {
	if r.cfg.BatchRecords <= 1 || r.solo(m) || !r.batching(m, src) {
		return r.deliverRecord(ctx, m, src.hwm)
	}
	batch := r.batch[:0]
	last := m
	var single *sarama.ConsumerMessage // a record with headers, after the batch
	for {
		if r.cfg.Filter == nil || r.cfg.Filter(m) {
			batch = append(batch, m)
		}
		last = m
		next := m.Offset + 1
		if len(batch) >= r.cfg.BatchRecords || (!r.caughtUp && next >= r.end) || (stopAt >= 0 && next >= stopAt) {
			break
		}
		if m = fetched(src.msgs, next); m == nil {
			break
		}
		if r.solo(m) {
			single = m
			break
		}
	}
	err := r.deliverBatch(ctx, batch, last, src.hwm)
	clear(batch)
	r.batch = batch[:0]
	if err != nil || single == nil {
		return err
	}
	return r.deliverRecord(ctx, single, src.hwm)
}

// solo reports whether m must go in a message of its own
// (ReaderConfig.Solo).
func (r *partitionReader) solo(m *sarama.ConsumerMessage) bool {
	if len(m.Headers) == 0 {
		return false
	}
	if r.cfg.Solo != nil {
		return r.cfg.Solo(m.Headers)
	}
	return sampledTrace(m.Headers)
}

// sampledTrace reports whether headers hold a W3C traceparent
// (version-traceid-parentid-flags, in hex) whose flags say sampled.
func sampledTrace(headers []*sarama.RecordHeader) bool {
	for _, h := range headers {
		if h == nil || string(h.Key) != "traceparent" {
			continue
		}
		parts := strings.Split(string(h.Value), "-")
		if len(parts) < 4 || len(parts[3]) != 2 {
			return false
		}
		flags, err := strconv.ParseUint(parts[3], 16, 8)
		return err == nil && flags&1 == 1
	}
	return false
}

// batching reports whether m may start a batch (ReaderConfig.BatchBehind).
func (r *partitionReader) batching(m *sarama.ConsumerMessage, src source) bool {
	if r.cfg.BatchBehind <= 0 || !r.caughtUp || src.hwm == nil {
		return true
	}
	return src.hwm()-m.Offset > r.cfg.BatchBehind
}

// fetched returns the next record at or after offset next that msgs holds
// already, or nil if there is none or msgs is closed (read sees the close).
func fetched(msgs <-chan *sarama.ConsumerMessage, next int64) *sarama.ConsumerMessage {
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			if m.Offset >= next {
				return m
			}
			// delivered already, before a switch of source
		default:
			return nil
		}
	}
}

// deliverBatch delivers the records of batch in one message (none: nothing
// to send, the filter dropped them) and moves next past last.
func (r *partitionReader) deliverBatch(ctx context.Context, batch []*sarama.ConsumerMessage, last *sarama.ConsumerMessage, hwm func() int64) error {
	if len(batch) > 0 {
		if err := r.out.deliver(ctx, recordsMessage(ctx, batch, &r.recs)); err != nil {
			return err
		}
	}
	r.next = last.Offset + 1
	r.cfg.Observer.RecordRead(last.Topic, last.Partition, last.Offset, hwm())
	return nil
}

func (r *partitionReader) deliverRecord(ctx context.Context, m *sarama.ConsumerMessage, hwm func() int64) error {
	if r.cfg.Filter == nil || r.cfg.Filter(m) {
		if err := r.out.deliver(ctx, recordMessage(ctx, m)); err != nil {
			return err
		}
	}
	r.next = m.Offset + 1
	r.cfg.Observer.RecordRead(m.Topic, m.Partition, m.Offset, hwm())
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
	r.cfg.Observer.ReadFailed(r.topic, cerr)
	return false
}
