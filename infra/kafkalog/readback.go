package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaproto"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// readBackBytes bounds one fetch of ReadBack: about 10,000 checkpoint
// records. On an idle loopback the size does not matter (BenchmarkReadBack:
// the same 0.08 s for 300k records at 1 and 16 MiB); on a busy broker each
// fetch waits its turn, and in the scale-out kill scenario 4 MiB took half
// the restore time of 1 MiB but raised a new owner's peak RSS by up to
// 30 MB (each answer is decoded whole, and two are held at once).
const readBackBytes = 2 << 20

// ReadBack reads topic once, from each partition's oldest offset to the end
// offset it has when the read starts, and calls fn for every record, in
// offset order per partition, one partition after another. It returns fn's
// first error, or ctx's, or the first fetch error it cannot retry.
//
// It fetches from the partition leaders itself instead of running a
// consumer: a new shard owner's restore reads the checkpoints topic whole,
// often hundreds of thousands of records not compacted yet, while its
// shards wait, and sarama's consumer, which hands records over one channel
// send at a time, reads them about ten times slower (BenchmarkReadBack).
// Transaction markers are stepped over; with cfg.ReadCommitted, so are
// aborted transactions' records. A partition whose oldest records are
// deleted while it is read (retention) goes on from its new oldest offset.
func ReadBack(ctx context.Context, cfg ReaderConfig, topic string, fn func(envelope.Record) error) error {
	return ReadBackKeys(ctx, cfg, topic, nil, fn)
}

// ReadBackKeys is ReadBack calling fn only for the records whose key keep
// accepts (all of them with a nil keep). A restore wants a few shards'
// records of a topic every instance writes to: the others are stepped over
// before they cost a record's allocations.
func ReadBackKeys(ctx context.Context, cfg ReaderConfig, topic string, keep func(key []byte) bool, fn func(envelope.Record) error) error {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("read back %s: %w", topic, err)
	}
	// Ready once the read is done, not on connecting: a read retried after
	// a denied fetch would otherwise clear the failure at each attempt.
	obs := cfg.Observer
	cfg.Observer = failuresOnly{obs}
	log := cfg.logger(topic)
	began := time.Now()
	client := connect(ctx, &cfg, cfg.saramaConfig(), log)
	if client == nil {
		return ctx.Err()
	}
	defer client.Close()
	connected := time.Since(began)
	partitions := awaitTopic(ctx, &cfg, client, topic, log)
	if partitions == nil {
		return ctx.Err()
	}
	bo := newBackoff(cfg.RetryBackoff, cfg.MaxRetryBackoff)
	var starts, ends map[int32]int64
	for {
		var err error
		if ends, err = listOffsets(client, topic, partitions, sarama.OffsetNewest); err == nil {
			starts, err = listOffsets(client, topic, partitions, sarama.OffsetOldest)
		}
		if err == nil {
			break
		}
		cfg.Observer.ReadFailed(topic, fmt.Errorf("offsets of %s: %w", topic, err))
		if !pause(ctx, bo) {
			return ctx.Err()
		}
	}
	listed := time.Since(began)
	r := backReader{client: client, cfg: &cfg, topic: topic, keep: keep, fn: fn}
	var records int64
	for _, p := range partitions {
		if err := r.partition(ctx, p, starts[p], ends[p]); err != nil {
			return err
		}
		records += ends[p] - starts[p]
	}
	obs.ReadReady(topic)
	// A hand-over waits for this read: where its time went.
	log.Debug("read back", "offsets", records, "connect", connected.Round(time.Millisecond),
		"list_offsets", (listed - connected).Round(time.Millisecond), "fetches", r.fetches.Load(),
		"fetch_wait", time.Duration(r.fetchWait.Load()).Round(time.Millisecond), "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// failuresOnly passes on an Observer's failures and nothing else.
type failuresOnly struct{ Observer }

func (failuresOnly) RecordRead(string, int32, int64, int64) {}
func (failuresOnly) ReadReady(string)                       {}

// backReader is one ReadBack's state.
type backReader struct {
	client sarama.Client
	cfg    *ReaderConfig
	topic  string
	keep   func(key []byte) bool
	fn     func(envelope.Record) error

	fetches   atomic.Int64 // fetch requests made
	fetchWait atomic.Int64 // nanoseconds spent waiting for their answers
}

// fetchedBlock is one fetch's answer for a partition, the offset it was
// asked at and the offset after its last whole batch below the end.
type fetchedBlock struct {
	block      *sarama.FetchResponseBlock
	from, next int64
	err        error
}

// partition delivers the records of partition p in [from, end). The next
// fetch is under way while fn goes through the records of the one before:
// the broker's answer and the decoding take as long as going through them.
func (r *backReader) partition(ctx context.Context, p int32, from, end int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The next answer is fetched while one is gone through: two answers'
	// bytes at most.
	blocks := make(chan fetchedBlock)
	go r.fetchAll(ctx, p, from, end, blocks)
	isolation := r.client.Config().Consumer.IsolationLevel
	for f := range blocks {
		if f.err != nil {
			return f.err
		}
		next, err := r.deliver(f.block, isolation, p, f.from, end)
		if err != nil {
			return err
		}
		if next != f.next {
			return fmt.Errorf("read back partition %d of %s: went through to offset %d, the scan said %d", p, r.topic, next, f.next)
		}
	}
	return ctx.Err()
}

// fetchAll fetches partition p's records in [from, end) one answer after
// another and sends them, with the first error it cannot retry, on out,
// which it closes.
func (r *backReader) fetchAll(ctx context.Context, p int32, from, end int64, out chan<- fetchedBlock) {
	defer close(out)
	send := func(f fetchedBlock) bool {
		select {
		case out <- f:
			return true
		case <-ctx.Done():
			return false
		}
	}
	sc := r.client.Config()
	bo := newBackoff(r.cfg.RetryBackoff, r.cfg.MaxRetryBackoff)
	for from < end {
		if ctx.Err() != nil {
			return
		}
		asked := time.Now()
		block, err := r.fetch(p, from)
		r.fetches.Add(1)
		r.fetchWait.Add(int64(time.Since(asked)))
		if err == nil {
			switch {
			case errors.Is(block.Err, sarama.ErrOffsetOutOfRange):
				// Deleted under us: what is left starts further on.
				var oldest map[int32]int64
				if oldest, err = listOffsets(r.client, r.topic, []int32{p}, sarama.OffsetOldest); err == nil {
					from = max(from, oldest[p])
					continue
				}
			case !errors.Is(block.Err, sarama.ErrNoError):
				err = block.Err
			}
		}
		if err != nil {
			err = fmt.Errorf("read back partition %d of %s at offset %d: %w", p, r.topic, from, err)
			r.cfg.Observer.ReadFailed(r.topic, err)
			if !stale(err) && !retriable(err) {
				send(fetchedBlock{err: err})
				return
			}
			_ = r.client.RefreshMetadata(r.topic)
			if !pause(ctx, bo) {
				return
			}
			continue
		}
		// Where the next fetch starts, without going through the records.
		next, err := eachDeliverable(block, sc.Consumer.IsolationLevel, from, end, func(*sarama.RecordBatch, *sarama.Record, int64) (bool, error) {
			return true, nil
		})
		switch {
		case errors.Is(err, errLegacyFormat):
			err = fmt.Errorf("read back partition %d of %s at offset %d: %w, which it does not read", p, r.topic, next, err)
		case err == nil && next <= from:
			err = fmt.Errorf("read back partition %d of %s: no whole batch at offset %d below the end %d", p, r.topic, from, end)
		}
		if err != nil {
			send(fetchedBlock{err: err})
			return
		}
		if !send(fetchedBlock{block: block, from: from, next: next}) {
			return
		}
		from = next
	}
}

// fetch asks the partition's leader for its records from offset from.
func (r *backReader) fetch(p int32, from int64) (*sarama.FetchResponseBlock, error) {
	sc := r.client.Config()
	leader, err := r.client.Leader(r.topic, p)
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	// Records below the end are there, so it answers at once.
	req := kafkaproto.FetchOne(sc.Version, sc.Consumer.IsolationLevel, r.topic, p, from, readBackBytes, 1, 500)
	resp, err := leader.Fetch(req)
	if err != nil {
		_ = leader.Close() // sarama reopens it on next use
		return nil, fmt.Errorf("fetch on broker %d: %w", leader.ID(), err)
	}
	block := resp.GetBlock(r.topic, p)
	if block == nil {
		return nil, sarama.ErrIncompleteResponse
	}
	return block, nil
}

// deliver calls fn for the records of block in [from, end) that a consumer
// with the isolation level would deliver and keep accepts, and returns the
// offset after the last whole batch it went through.
func (r *backReader) deliver(block *sarama.FetchResponseBlock, isolation sarama.IsolationLevel, p int32, from, end int64) (int64, error) {
	return eachDeliverable(block, isolation, from, end, func(b *sarama.RecordBatch, rec *sarama.Record, off int64) (bool, error) {
		if off < from || (r.keep != nil && !r.keep(rec.Key)) {
			return true, nil
		}
		return true, r.fn(backRecord(r.topic, p, b, rec, off))
	})
}

// backRecord is rec of batch b as an envelope.Record.
func backRecord(topic string, p int32, b *sarama.RecordBatch, rec *sarama.Record, off int64) envelope.Record {
	ts := b.FirstTimestamp.Add(rec.TimestampDelta)
	if b.LogAppendTime {
		ts = b.MaxTimestamp
	}
	return envelope.Record{Topic: topic, Partition: p, Offset: off, Timestamp: ts, Key: rec.Key, Value: rec.Value,
		Headers: headerMap(rec.Headers)}
}

// retriable reports whether a fetch error passes by itself: a connection
// cut, a broker restarting or overloaded.
func retriable(err error) bool {
	var kerr sarama.KError
	if !errors.As(err, &kerr) {
		return true // the connection, not the broker's answer
	}
	switch kerr {
	case sarama.ErrRequestTimedOut, sarama.ErrNetworkException, sarama.ErrNotEnoughReplicas,
		sarama.ErrKafkaStorageError, sarama.ErrBrokerNotAvailable:
		return true
	}
	return false
}
