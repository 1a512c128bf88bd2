package kafkalog

import (
	"testing"

	"github.com/IBM/sarama"
)

// batch makes a record batch at first with n records, one per offset.
func batch(first int64, n int, producer int64, transactional, control bool) *sarama.Records {
	b := &sarama.RecordBatch{
		FirstOffset:     first,
		LastOffsetDelta: int32(n - 1),
		ProducerID:      producer,
		IsTransactional: transactional,
		Control:         control,
	}
	for i := range n {
		b.Records = append(b.Records, &sarama.Record{OffsetDelta: int64(i)})
	}
	return &sarama.Records{RecordBatch: b}
}

func TestScanDeliverable(t *testing.T) {
	// 10-11 plain records; 12-13 a transaction of producer 7, aborted by the
	// marker at 14; 15 a transaction of producer 8, committed at 16.
	block := &sarama.FetchResponseBlock{
		AbortedTransactions: []*sarama.AbortedTransaction{{ProducerID: 7, FirstOffset: 12}},
		RecordsSet: []*sarama.Records{
			batch(10, 2, -1, false, false),
			batch(12, 2, 7, true, false),
			batch(14, 1, 7, true, true),
			batch(15, 1, 8, true, false),
			batch(16, 1, 8, true, true),
		},
	}
	tests := []struct {
		name           string
		isolation      sarama.IsolationLevel
		from, limit    int64
		found, scanned int64
	}{
		{"plain record first", sarama.ReadCommitted, 10, 17, 10, 10},
		{"inside a batch", sarama.ReadCommitted, 11, 17, 11, 11},
		{"aborted records and their marker skipped", sarama.ReadCommitted, 12, 17, 15, 15},
		{"aborted records delivered read_uncommitted", sarama.ReadUncommitted, 12, 17, 12, 12},
		{"nothing deliverable before limit", sarama.ReadCommitted, 12, 15, -1, 15},
		{"only a commit marker left", sarama.ReadCommitted, 16, 17, -1, 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found, scanned := scanDeliverable(block, tt.isolation, tt.from, tt.limit)
			if found != tt.found || scanned != tt.scanned {
				t.Errorf("scanDeliverable(%d, %d) = %d, %d; want %d, %d", tt.from, tt.limit, found, scanned, tt.found, tt.scanned)
			}
		})
	}
}

func TestScanDeliverableStopsAtPartialBatch(t *testing.T) {
	partial := batch(12, 1, -1, false, false)
	partial.RecordBatch.PartialTrailingRecord = true
	block := &sarama.FetchResponseBlock{RecordsSet: []*sarama.Records{batch(10, 2, 5, true, true), partial}}
	found, scanned := scanDeliverable(block, sarama.ReadCommitted, 10, 20)
	if found != -1 || scanned != 12 {
		t.Errorf("scanDeliverable = %d, %d; want -1, 12", found, scanned)
	}
}
