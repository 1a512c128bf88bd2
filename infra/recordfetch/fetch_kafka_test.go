package recordfetch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/recordfetch"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

// TestReadOnKafka reads records back with everything the comparison uses:
// timestamps, null and empty keys, headers in order, transactional batches
// and their markers, LogAppendTime, and counts the bytes against the budget.
func TestReadOnKafka(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "fetch")
	c.CreateTopic(t, topic, 1, nil)
	appendTopic := kafkatest.UniqueName(t, "fetch-lat")
	c.CreateTopic(t, appendTopic, 1, map[string]string{"message.timestamp.type": "LogAppendTime"})

	cfg := c.SaramaConfig()
	cfg.Producer.Return.Successes = true
	producer, err := sarama.NewSyncProducer(c.Brokers(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	ts := time.UnixMilli(1_700_000_000_123)
	msgs := []*sarama.ProducerMessage{
		{Topic: topic, Value: sarama.StringEncoder("null key"), Timestamp: ts},
		{Topic: topic, Key: sarama.ByteEncoder{}, Value: sarama.StringEncoder("empty key"), Timestamp: ts.Add(time.Millisecond)},
		{Topic: topic, Key: sarama.StringEncoder("k"), Value: nil, Timestamp: ts.Add(2 * time.Millisecond),
			Headers: []sarama.RecordHeader{{Key: []byte("b"), Value: []byte("2")}, {Key: []byte("a"), Value: nil}}},
	}
	for _, m := range msgs {
		if _, _, err := producer.SendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	produceTxn(t, c, topic, 2)
	if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: appendTopic, Value: sarama.StringEncoder("x"), Timestamp: ts}); err != nil {
		t.Fatal(err)
	}

	r := recordfetch.New(c.Client(t), "source")
	// 3 records, 2 in a transaction, 1 marker (written after the abort
	// returns).
	var end int64
	for deadline := time.Now().Add(10 * time.Second); end != 6 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		end, err = r.End(topic, 0)
	}
	if err != nil || end != 6 {
		t.Fatalf("End = %d, %v; want 6", end, err)
	}
	budget := &recordfetch.Budget{}
	got, err := r.Range(context.Background(), topic, 0, 0, end, budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("read %d records, want 6: %+v", len(got), got)
	}
	for i, r := range got {
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, r.Offset)
		}
	}
	switch {
	case got[0].Key != nil || got[0].Timestamp != ts.UnixMilli():
		t.Fatalf("record 0: key %q (nil %v), timestamp %d", got[0].Key, got[0].Key == nil, got[0].Timestamp)
	case got[1].Key == nil || len(got[1].Key) != 0:
		t.Fatalf("record 1: the empty key came back as %#v", got[1].Key)
	case got[2].Value != nil || len(got[2].Headers) != 2 || got[2].Headers[0].Key != "b" || string(got[2].Headers[0].Value) != "2" || got[2].Headers[1].Value != nil:
		t.Fatalf("record 2: value %#v, headers %+v", got[2].Value, got[2].Headers)
	case !got[3].Transactional || !got[4].Transactional || got[3].Control || !got[5].Control:
		t.Fatalf("transaction: %+v %+v %+v", got[3], got[4], got[5])
	case got[0].Transactional || got[0].Control || got[0].LogAppendTime:
		t.Fatalf("plain record 0 has batch flags: %+v", got[0])
	}
	if budget.Used == 0 {
		t.Fatal("no bytes counted")
	}

	// A range that starts mid-way and stops early returns just that.
	part, err := r.Range(context.Background(), topic, 0, 1, 3, &recordfetch.Budget{})
	if err != nil || len(part) != 2 || part[0].Offset != 1 || part[1].Offset != 2 {
		t.Fatalf("Range(1, 3) = %+v, %v", part, err)
	}

	lat, err := r.Range(context.Background(), appendTopic, 0, 0, 1, &recordfetch.Budget{})
	if err != nil || len(lat) != 1 || !lat[0].LogAppendTime || lat[0].Timestamp == ts.UnixMilli() {
		t.Fatalf("LogAppendTime topic: %+v, %v", lat, err)
	}

	// The budget stops a read that needs more.
	if _, err := r.Range(context.Background(), topic, 0, 0, end, &recordfetch.Budget{Limit: 5}); !errors.Is(err, recordfetch.ErrBudgetExceeded) {
		t.Fatalf("over budget: %v, want ErrBudgetExceeded", err)
	}
	// Offsets past the end are out of range.
	if _, err := r.Range(context.Background(), topic, 0, end+10, end+20, &recordfetch.Budget{}); !errors.Is(err, recordfetch.ErrOutOfRange) {
		t.Fatalf("past the end: %v, want ErrOutOfRange", err)
	}
}

func produceTxn(t *testing.T, c *kafkatest.Cluster, topic string, n int) {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Transaction.ID = kafkatest.UniqueName(t, "txn")
	cfg.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer(c.Brokers(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if err := producer.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("txn-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := producer.AbortTxn(); err != nil {
		t.Fatal(err)
	}
}
