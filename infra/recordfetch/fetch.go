// Package recordfetch reads ranges of a partition's data records, with the
// attributes of their batches, straight from the partition's leader: what an
// exact offset translation compares on the source and the target. Every read
// counts the bytes it fetched against a budget.
package recordfetch

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaproto"
)

// Header is one record header, in the record's order.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record of a partition, with its batch's attributes.
type Record struct {
	Offset        int64
	Timestamp     int64 // milliseconds; the broker's append time under LogAppendTime
	Key, Value    []byte
	Headers       []Header
	Transactional bool // in a transactional batch, committed or aborted
	Control       bool // a transaction marker
	LogAppendTime bool
}

// Errors a read wraps, for the caller to name a fallback by.
var (
	// ErrReadDenied: the principal may not READ the topic.
	ErrReadDenied = errors.New("no READ permission")
	// ErrBudgetExceeded: the range needs more bytes than the budget left.
	ErrBudgetExceeded = errors.New("fetch budget exceeded")
	// ErrOutOfRange: the offsets asked for are not in the partition (its
	// log was deleted, truncated or re-created).
	ErrOutOfRange = errors.New("offset out of range")
)

// Budget is how many record bytes (keys, values and headers) the reads of
// one translation may fetch. It is not safe for concurrent use.
type Budget struct {
	Limit int64 // 0 or less: no limit
	Used  int64
}

// spend counts n bytes; it reports false once the budget is exceeded.
func (b *Budget) spend(n int64) bool {
	b.Used += n
	return b.Limit <= 0 || b.Used <= b.Limit
}

// fetchBytes is the most one fetch asks for: enough for the records between
// two offset syncs of typical records, small enough that a search that finds
// its record early reads little past it.
const fetchBytes = 256 << 10

// Reader reads records of one cluster.
type Reader struct {
	client  sarama.Client
	cluster string // its alias, for errors
}

// New returns a Reader over client, whose cluster is named cluster in errors.
// The client stays the caller's.
func New(client sarama.Client, cluster string) *Reader {
	return &Reader{client: client, cluster: cluster}
}

// End returns the partition's log end offset (its high watermark).
func (r *Reader) End(topic string, partition int32) (int64, error) {
	off, err := r.client.GetOffset(topic, partition, sarama.OffsetNewest)
	if err != nil {
		return 0, r.wrap(topic, partition, "end offset", err)
	}
	return off, nil
}

// Fetch makes one fetch of the partition from offset from and returns its
// records below to, in offset order, and the offset the fetch covered up to
// (the next to ask for). Transaction markers come back as Control records
// and aborted transactions' records as they are (read_uncommitted): the
// caller is told they are there.
func (r *Reader) Fetch(ctx context.Context, topic string, partition int32, from, to int64, budget *Budget) ([]Record, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, from, err
	}
	leader, err := r.client.Leader(topic, partition)
	if err != nil {
		return nil, from, r.wrap(topic, partition, "leader", err)
	}
	sc := r.client.Config()
	// Ask for no more than the budget has left; the broker still returns
	// the first batch whole if it is larger.
	size := int32(fetchBytes)
	if budget.Limit > 0 {
		size = int32(max(1, min(int64(fetchBytes), budget.Limit-budget.Used)))
	}
	// Uncommitted: the search must see transactional batches to fall back.
	req := kafkaproto.FetchOne(sc.Version, sarama.ReadUncommitted, topic, partition, from, size, 1, 100)
	resp, err := leader.Fetch(req)
	if err != nil {
		_ = leader.Close() // sarama reopens it on next use
		return nil, from, r.wrap(topic, partition, fmt.Sprintf("fetch at offset %d", from), err)
	}
	block := resp.GetBlock(topic, partition)
	if block == nil {
		return nil, from, r.wrap(topic, partition, "fetch", sarama.ErrIncompleteResponse)
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return nil, from, r.wrap(topic, partition, fmt.Sprintf("fetch at offset %d", from), block.Err)
	}
	var out []Record
	next := from
	var got int64
	for _, rs := range block.RecordsSet {
		b := rs.RecordBatch
		if b == nil {
			return nil, from, fmt.Errorf("partition %d of %s on cluster %q: records in the pre-0.11 format, which exact translation does not read", partition, topic, r.cluster)
		}
		if b.PartialTrailingRecord || b.FirstOffset >= to {
			break
		}
		for _, rec := range b.Records {
			off := b.FirstOffset + rec.OffsetDelta
			if off < from || off >= to {
				continue
			}
			out = append(out, record(b, rec, off))
			got += int64(len(rec.Key) + len(rec.Value))
			for _, h := range rec.Headers {
				got += int64(len(h.Key) + len(h.Value))
			}
		}
		next = max(next, b.LastOffset()+1)
	}
	if !budget.spend(got) {
		return nil, from, fmt.Errorf("partition %d of %s on cluster %q: %w (%d bytes used of %d)", partition, topic, r.cluster, ErrBudgetExceeded, budget.Used, budget.Limit)
	}
	if next <= from && len(block.RecordsSet) > 0 {
		return nil, from, fmt.Errorf("partition %d of %s on cluster %q: no whole batch at offset %d within %d bytes", partition, topic, r.cluster, from, size)
	}
	return out, min(next, to), nil
}

// Range reads the records in [from, to) with as many fetches as it takes.
func (r *Reader) Range(ctx context.Context, topic string, partition int32, from, to int64, budget *Budget) ([]Record, error) {
	var out []Record
	for from < to {
		recs, next, err := r.Fetch(ctx, topic, partition, from, to, budget)
		if err != nil {
			return nil, err
		}
		if next <= from {
			return nil, fmt.Errorf("partition %d of %s on cluster %q: nothing at offset %d below %d", partition, topic, r.cluster, from, to)
		}
		out = append(out, recs...)
		from = next
	}
	return out, nil
}

func record(b *sarama.RecordBatch, rec *sarama.Record, off int64) Record {
	ts := b.FirstTimestamp.Add(rec.TimestampDelta)
	if b.LogAppendTime {
		ts = b.MaxTimestamp
	}
	out := Record{Offset: off, Timestamp: ts.UnixMilli(), Key: rec.Key, Value: rec.Value,
		Transactional: b.IsTransactional, Control: b.Control, LogAppendTime: b.LogAppendTime}
	if len(rec.Headers) > 0 {
		out.Headers = make([]Header, len(rec.Headers))
		for i, h := range rec.Headers {
			out.Headers[i] = Header{Key: string(h.Key), Value: h.Value}
		}
	}
	return out
}

// wrap names the partition and cluster and maps the errors a caller tells
// apart onto ErrReadDenied and ErrOutOfRange.
func (r *Reader) wrap(topic string, partition int32, what string, err error) error {
	switch {
	case errors.Is(err, sarama.ErrTopicAuthorizationFailed), errors.Is(err, sarama.ErrClusterAuthorizationFailed):
		err = fmt.Errorf("%w: %w", ErrReadDenied, err)
	case errors.Is(err, sarama.ErrOffsetOutOfRange):
		err = fmt.Errorf("%w: %w", ErrOutOfRange, err)
	}
	return fmt.Errorf("%s of partition %d of %s on cluster %q: %w", what, partition, topic, r.cluster, err)
}
