package kafkalog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaproto"
)

// probeBytes bounds one probe fetch. Brokers return at least one whole batch
// whatever the bound (KIP-74), so a large batch cannot stall a probe.
const probeBytes = 1 << 20

// tailProbe finds the first record a consumer would deliver in a range of a
// partition. Transaction markers and aborted transactional records take
// offsets but are never delivered, and sarama does not tell its caller when
// it steps over them. So a partition that ends with a marker, as one written
// by a transactional producer always does, has no record at end-1, and a
// reader that waits for one never catches up.
type tailProbe struct {
	client sarama.Client
}

// firstDeliverable returns the offset of the first record in [from, limit)
// that a consumer with the client's isolation level would deliver, or limit
// if there is none. When it cannot tell (the broker has nothing past from
// yet) it returns from.
func (t tailProbe) firstDeliverable(topic string, partition int32, from, limit int64) (int64, error) {
	cfg := t.client.Config()
	for from < limit {
		leader, err := t.client.Leader(topic, partition)
		if err != nil {
			return from, fmt.Errorf("leader of partition %d: %w", partition, err)
		}
		req := kafkaproto.FetchOne(cfg.Version, cfg.Consumer.IsolationLevel, topic, partition, from, probeBytes, 0, 0)
		resp, err := leader.Fetch(req)
		if err != nil {
			return from, fmt.Errorf("probe fetch of partition %d on broker %d: %w", partition, leader.ID(), err)
		}
		block := resp.GetBlock(topic, partition)
		if block == nil {
			return from, fmt.Errorf("probe fetch of partition %d: %w", partition, sarama.ErrIncompleteResponse)
		}
		if !errors.Is(block.Err, sarama.ErrNoError) {
			if stale(block.Err) {
				_ = t.client.RefreshMetadata(topic)
			}
			return from, fmt.Errorf("probe fetch of partition %d at offset %d: %w", partition, from, block.Err)
		}
		found, scanned := scanDeliverable(block, cfg.Consumer.IsolationLevel, from, limit)
		if found >= 0 {
			return found, nil
		}
		if scanned <= from {
			return from, nil
		}
		from = scanned
	}
	return limit, nil
}

// scanDeliverable walks the batches of one fetch answer the way sarama's
// consumer does and returns the first deliverable offset in [from, limit)
// (-1 if none) and the offset after the last whole batch it looked at.
func scanDeliverable(block *sarama.FetchResponseBlock, isolation sarama.IsolationLevel, from, limit int64) (found, scanned int64) {
	found = -1
	scanned, err := eachDeliverable(block, isolation, from, limit, func(_ *sarama.RecordBatch, _ *sarama.Record, off int64) (bool, error) {
		if off < from {
			return true, nil
		}
		found = off
		return false, nil
	})
	if errors.Is(err, errLegacyFormat) {
		// Message format v0/v1 has no markers to step over: the
		// consumer delivers what is there, so do not second-guess it.
		return from, scanned
	}
	return found, scanned
}

// errLegacyFormat is what eachDeliverable says of a message set in format
// v0/v1, which Kafka 4 no longer writes.
var errLegacyFormat = errors.New("message format v0/v1")

// eachDeliverable calls visit, in offset order, for each record of block's
// whole batches below limit that a consumer with the isolation level would
// deliver: not transaction markers, and under read_committed not the
// records of aborted transactions. It returns the offset after the last
// batch it went through whole (at least from); visit returning false or an
// error stops it inside a batch, which then does not count.
func eachDeliverable(block *sarama.FetchResponseBlock, isolation sarama.IsolationLevel, from, limit int64,
	visit func(b *sarama.RecordBatch, rec *sarama.Record, off int64) (bool, error)) (scanned int64, err error) {
	aborts := slices.Clone(block.AbortedTransactions)
	slices.SortFunc(aborts, func(a, b *sarama.AbortedTransaction) int {
		return cmp.Compare(a.FirstOffset, b.FirstOffset)
	})
	aborted := make(map[int64]bool) // producers inside an aborted transaction
	scanned = from
	for _, recs := range block.RecordsSet {
		b := recs.RecordBatch
		if b == nil {
			return scanned, errLegacyFormat
		}
		if b.PartialTrailingRecord || b.FirstOffset >= limit {
			break
		}
		for len(aborts) > 0 && aborts[0].FirstOffset <= b.LastOffset() {
			aborted[aborts[0].ProducerID] = true
			aborts = aborts[1:]
		}
		switch {
		case b.Control:
			// A marker ends its producer's transaction, whichever way.
			delete(aborted, b.ProducerID)
		case isolation == sarama.ReadCommitted && b.IsTransactional && aborted[b.ProducerID]:
		default:
			for _, r := range b.Records {
				off := b.FirstOffset + r.OffsetDelta
				if off >= limit {
					break
				}
				if more, err := visit(b, r, off); !more || err != nil {
					return scanned, err
				}
			}
		}
		scanned = max(scanned, b.LastOffset()+1)
	}
	return scanned, nil
}
