package kafkalog_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// ReadBack gives what ReadLog gives: every record of every partition below
// the end, keys, values, tombstones, headers and timestamps, stepping over
// transaction markers and, under read_committed, aborted records.
func TestReadBackReadsWhatReadLogReads(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "back")
	c.CreateTopic(t, topic, 3, nil)
	producer, err := sarama.NewSyncProducer(c.Brokers(), c.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*sarama.ProducerMessage
	for i := range 3000 {
		m := &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 3), Key: sarama.StringEncoder(fmt.Sprintf("k%d", i%50)),
			Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))}
		switch i % 7 {
		case 0:
			m.Value = nil // a tombstone
		case 1:
			m.Headers = []sarama.RecordHeader{{Key: []byte("traceparent"), Value: []byte(fmt.Sprintf("t%d", i))}}
		}
		msgs = append(msgs, m)
	}
	if err := producer.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	producer.Close()
	produceTxn(t, c, topic, 1, "aborted", 2, false)
	produceTxn(t, c, topic, 2, "committed", 2, true)

	for _, readCommitted := range []bool{false, true} {
		t.Run(fmt.Sprintf("read_committed=%v", readCommitted), func(t *testing.T) {
			log, _ := newLog(t)
			cfg := readerConfig(t, c, log)
			cfg.ReadCommitted = readCommitted
			cfg.BatchRecords = 4096 // else a lone record's headers are its message's metadata
			want := readAll(t, func(fn func(envelope.Record) error) error {
				return kafkalog.ReadLog(context.Background(), cfg, topic, false, fn)
			})
			got := readAll(t, func(fn func(envelope.Record) error) error {
				return kafkalog.ReadBack(context.Background(), cfg, topic, fn)
			})
			wantRecords := 3000 + 2
			if !readCommitted {
				wantRecords += 2
			}
			if len(want) != wantRecords {
				t.Fatalf("ReadLog read %d records, want %d", len(want), wantRecords)
			}
			if len(got) != len(want) {
				t.Fatalf("ReadBack read %d records, ReadLog %d", len(got), len(want))
			}
			for k, w := range want {
				g, ok := got[k]
				if !ok {
					t.Fatalf("ReadBack missed %s", k)
				}
				if string(g.Key) != string(w.Key) || string(g.Value) != string(w.Value) || g.Tombstone() != w.Tombstone() ||
					!g.Timestamp.Equal(w.Timestamp) || !maps.Equal(g.Headers, w.Headers) {
					t.Fatalf("%s: ReadBack %+v, ReadLog %+v", k, g, w)
				}
			}
		})
	}
}

// ReadBack stops at fn's first error and returns it.
func TestReadBackReturnsTheCallbacksError(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "back")
	c.CreateTopic(t, topic, 1, nil)
	c.Produce(t, topic, 0, 10)
	log, _ := newLog(t)
	stop := fmt.Errorf("enough")
	var offsets []int64
	err := kafkalog.ReadBack(context.Background(), readerConfig(t, c, log), topic, func(r envelope.Record) error {
		offsets = append(offsets, r.Offset)
		if len(offsets) == 4 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("ReadBack returned %v, want the callback's error", err)
	}
	if !slices.Equal(offsets, []int64{0, 1, 2, 3}) {
		t.Fatalf("offsets %v before the error, want 0..3", offsets)
	}
}

// readAll collects what read delivers by topic position, failing on a
// position delivered twice.
func readAll(t *testing.T, read func(func(envelope.Record) error) error) map[string]envelope.Record {
	t.Helper()
	out := make(map[string]envelope.Record)
	err := read(func(r envelope.Record) error {
		k := fmt.Sprintf("%d@%d", r.Partition, r.Offset)
		if _, dup := out[k]; dup {
			return fmt.Errorf("%s delivered twice", k)
		}
		out[k] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
