package kafkalog_test

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func newLogReader(t *testing.T, c *kafkatest.Cluster, options ...func(*kafkalog.ReaderConfig)) (*kafkalog.LogReader, *logBuffer) {
	t.Helper()
	log, lb := newLog(t)
	lb.dumpOnFailure()
	cfg := readerConfig(t, c, log)
	for _, o := range options {
		o(&cfg)
	}
	reader, err := kafkalog.NewLogReader(kafkalog.LogReaderConfig{ReaderConfig: cfg, PartitionRefresh: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Close() })
	return reader, lb
}

// offsetsOf returns the record offsets of one partition, in delivery order.
func offsetsOf(events []event, p int32) []int64 {
	var out []int64
	for _, e := range events {
		if e.control == "" && e.partition == p {
			out = append(out, e.offset)
		}
	}
	return out
}

func upTo(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

func TestLogReaderReplaysFromOldestThenTails(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "log")
	c.CreateTopic(t, topic, 3, nil)
	for p := range int32(3) {
		c.Produce(t, topic, p, 4)
	}
	produce(t, c, topic, 1, "traced", "v", map[string]string{"traceparent": traceparent, "other": "x"})
	produce(t, c, topic, 2, "deleted", "", nil)

	type lag struct{ offset, hwm int64 }
	var (
		lagMu sync.Mutex
		lags  = map[int32][]lag{}
	)
	reader, _ := newLogReader(t, c, func(cfg *kafkalog.ReaderConfig) {
		cfg.Observer = observerFuncs{onRecord: func(tp string, p int32, offset, hwm int64) {
			lagMu.Lock()
			defer lagMu.Unlock()
			if tp == topic {
				lags[p] = append(lags[p], lag{offset, hwm})
			}
		}}
	})
	var nacked atomic.Bool
	col := collect(t, topic, subscribe(t, reader, topic), func(e event) bool {
		// Nack one record once: it must come again, in its place.
		return e.partition != 0 || e.offset != 2 || !nacked.CompareAndSwap(false, true)
	})

	events := col.waitFor("CaughtUp", func(es []event) bool { return count(es, isControl(envelope.CaughtUp, -1)) > 0 })
	if last := events[len(events)-1]; last.control != envelope.CaughtUp {
		t.Fatalf("CaughtUp is not the last message before new records: %v", events)
	}
	want := map[int32][]int64{0: upTo(4), 1: upTo(5), 2: upTo(5)}
	for p, offsets := range want {
		if got := offsetsOf(events, p); !slices.Equal(got, offsets) {
			t.Errorf("partition %d before CaughtUp: offsets %v, want %v", p, got, offsets)
		}
	}
	if !nacked.Load() {
		t.Error("the record meant to be nacked never came")
	}
	for _, e := range events {
		switch {
		case e.partition == 1 && e.offset == 4:
			if e.meta.Get("traceparent") != traceparent || e.meta.Get("other") != "x" || e.key != "traced" {
				t.Errorf("record 1@4: key %q, metadata %v; want key traced and the record's headers", e.key, e.meta)
			}
		case e.partition == 2 && e.offset == 4:
			if !e.tombstone || e.key != "deleted" {
				t.Errorf("record 2@4: tombstone %v key %q, want a tombstone with key deleted", e.tombstone, e.key)
			}
		}
	}

	c.Produce(t, topic, 0, 2)
	events = col.waitFor("tailed records", func(es []event) bool { return len(offsetsOf(es, 0)) == 6 })
	if got := offsetsOf(events, 0); !slices.Equal(got, upTo(6)) {
		t.Errorf("partition 0 after tailing: offsets %v, want %v", got, upTo(6))
	}
	if n := count(events, func(e event) bool { return e.control != "" }); n != 1 {
		t.Errorf("%d control messages, want one CaughtUp: %v", n, events)
	}

	// RecordRead saw every acked record once, with a high watermark past it.
	// It runs after the ack, so wait for the last one.
	deadline := time.Now().Add(wait)
	lagMu.Lock()
	defer lagMu.Unlock()
	for len(lags[0]) < 6 && time.Now().Before(deadline) {
		lagMu.Unlock()
		time.Sleep(10 * time.Millisecond)
		lagMu.Lock()
	}
	for p, offsets := range map[int32][]int64{0: upTo(6), 1: upTo(5), 2: upTo(5)} {
		var got []int64
		for _, l := range lags[p] {
			got = append(got, l.offset)
			if l.hwm <= l.offset {
				t.Errorf("partition %d: RecordRead(offset %d, high watermark %d)", p, l.offset, l.hwm)
			}
		}
		if !slices.Equal(got, offsets) {
			t.Errorf("partition %d: RecordRead offsets %v, want %v", p, got, offsets)
		}
	}
}

func TestLogReaderEmptyTopicCaughtUpAtOnce(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "empty")
	c.CreateTopic(t, topic, 2, nil)

	reader, _ := newLogReader(t, c)
	col := collect(t, topic, subscribe(t, reader, topic), nil)
	events := col.waitFor("CaughtUp", func(es []event) bool { return len(es) > 0 })
	if events[0].control != envelope.CaughtUp || events[0].partition != -1 {
		t.Fatalf("first message %v, want CaughtUp(-1)", events[0])
	}
	c.Produce(t, topic, 1, 1)
	col.waitFor("a tailed record", func(es []event) bool { return len(offsetsOf(es, 1)) == 1 })

	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	events = col.waitClosed()
	if n := count(events, isControl(envelope.CaughtUp, -1)); n != 1 {
		t.Errorf("%d CaughtUp, want 1: %v", n, events)
	}
}

func TestLogReaderWaitsForMissingTopic(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "later")

	reader, logs := newLogReader(t, c)
	col := collect(t, topic, subscribe(t, reader, topic), nil)

	deadline := time.Now().Add(wait)
	for len(logs.lines("waiting for topic")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal(`no "waiting for topic" log line`)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // several retries
	if lines := logs.lines(`msg="waiting for topic"`, "topic="+topic, "cluster="+c.Alias); len(lines) != 1 {
		t.Errorf("want one waiting line naming topic and cluster, got %q", lines)
	}
	md, err := c.Admin(t).DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("waiting must not create the topic: describe = %+v, %v", md, err)
	}

	c.CreateTopic(t, topic, 2, nil)
	c.Produce(t, topic, 0, 3)
	events := col.waitFor("the records and CaughtUp", func(es []event) bool {
		return len(offsetsOf(es, 0)) == 3 && count(es, isControl(envelope.CaughtUp, -1)) == 1
	})
	if got := offsetsOf(events, 0); !slices.Equal(got, upTo(3)) {
		t.Errorf("offsets %v, want %v", got, upTo(3))
	}
	if len(logs.lines(`msg="topic found"`)) != 1 {
		t.Error(`no "topic found" log line`)
	}
}

// A transactional producer's log ends with a marker, not a record: the
// reader must still catch up, under either isolation level.
func TestLogReaderCatchesUpOverTransactionMarkers(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "txn")
	c.CreateTopic(t, topic, 1, nil)
	produceTxn(t, c, topic, 0, "committed", 3, true)
	produceTxn(t, c, topic, 0, "aborted", 2, false)
	// Five records and two markers: wait for the markers, which the
	// transaction coordinator writes after it answers.
	deadline := time.Now().Add(wait)
	for c.EndOffsets(t, topic)[0] != 7 {
		if time.Now().After(deadline) {
			t.Fatalf("end offset %d, want 7 once both markers are written", c.EndOffsets(t, topic)[0])
		}
		time.Sleep(50 * time.Millisecond)
	}

	for _, tt := range []struct {
		name          string
		readCommitted bool
		want          []string
	}{
		{"read_committed", true, []string{"committed-0", "committed-1", "committed-2"}},
		{"read_uncommitted", false, []string{"aborted-0", "aborted-1", "committed-0", "committed-1", "committed-2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reader, logs := newLogReader(t, c, func(cfg *kafkalog.ReaderConfig) { cfg.ReadCommitted = tt.readCommitted })
			col := collect(t, topic, subscribe(t, reader, topic), nil)
			events := col.waitFor("CaughtUp", func(es []event) bool { return count(es, isControl(envelope.CaughtUp, -1)) > 0 })
			var got []string
			for _, e := range events[:len(events)-1] {
				got = append(got, e.value)
			}
			if slices.Sort(got); !slices.Equal(got, tt.want) {
				t.Errorf("before CaughtUp: values %v, want %v", got, tt.want)
			}
			if len(logs.lines("skipped offsets without deliverable records", "to=7")) == 0 {
				t.Error("caught up, but not by probing past the markers")
			}
		})
	}
}

func TestLogReaderReadsPartitionsAddedLater(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "grow")
	c.CreateTopic(t, topic, 1, nil)
	c.Produce(t, topic, 0, 1)

	reader, logs := newLogReader(t, c)
	col := collect(t, topic, subscribe(t, reader, topic), nil)
	col.waitFor("CaughtUp", func(es []event) bool { return count(es, isControl(envelope.CaughtUp, -1)) > 0 })

	if err := c.Admin(t).CreatePartitions(topic, 2, nil, false); err != nil {
		t.Fatal(err)
	}
	produceWithRetry(t, c, topic, 1)
	events := col.waitFor("a record of the new partition", func(es []event) bool { return len(offsetsOf(es, 1)) == 1 })
	if n := count(events, func(e event) bool { return e.control != "" }); n != 1 {
		t.Errorf("%d control messages, want the one CaughtUp: %v", n, events)
	}
	if len(logs.lines(`msg="new partition"`, "partition=1")) != 1 {
		t.Error(`no "new partition" log line`)
	}
}

// produceWithRetry produces to a partition the cluster may not have told
// every client about yet.
func produceWithRetry(t *testing.T, c *kafkatest.Cluster, topic string, p int32) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		producer, err := sarama.NewSyncProducer([]string{c.Bootstrap}, c.SaramaConfig())
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder("new")})
		_ = producer.Close()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("produce to %s-%d: %v", topic, p, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
