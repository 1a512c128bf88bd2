package kafkalog_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// batchSeen is what a test sees of a reader with BatchRecords: every record
// in delivery order, and per message how many records it carried.
type batchSeen struct {
	mu       sync.Mutex
	offsets  map[int32][]int64
	sizes    []int
	caughtUp int // records seen when CaughtUp came; -1 before
	traced   map[int64]string
	total    int
}

// TestLogReaderBatches reads a topic with BatchRecords: records come in
// order, once each, several to a message; a record with headers comes on its
// own with its headers; a nacked message comes again whole, in its place; no
// message reaches past the end offset CaughtUp waits for, and records
// produced later are tailed.
func TestLogReaderBatches(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "batch")
	c.CreateTopic(t, topic, 2, nil)
	c.Produce(t, topic, 0, 700)
	tracedAt := produce(t, c, topic, 0, "traced", "v", map[string]string{"traceparent": traceparent})
	c.Produce(t, topic, 0, 300)
	produce(t, c, topic, 0, "deleted", "", nil) // a tombstone inside a batch
	c.Produce(t, topic, 1, 5)
	ends := map[int32]int64{0: 1002, 1: 5}

	var hookMu sync.Mutex
	hookLast := map[int32]int64{}
	reader, _ := newLogReader(t, c, func(cfg *kafkalog.ReaderConfig) {
		cfg.BatchRecords = 64
		cfg.Filter = func(m *sarama.ConsumerMessage) bool { return m.Partition != 1 || m.Offset != 3 }
		cfg.Observer = observerFuncs{onRecord: func(_ string, p int32, offset, _ int64) {
			hookMu.Lock()
			defer hookMu.Unlock()
			if offset <= hookLast[p] && hookLast[p] != 0 {
				t.Errorf("partition %d: RecordRead offset %d after %d", p, offset, hookLast[p])
			}
			hookLast[p] = offset
		}}
	})
	seen := &batchSeen{offsets: map[int32][]int64{}, caughtUp: -1, traced: map[int64]string{}}
	nacked := false
	ch := subscribe(t, reader, topic)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range ch {
			if c, _, _, ok := envelope.ControlOf(msg); ok {
				seen.mu.Lock()
				if c == envelope.CaughtUp {
					seen.caughtUp = seen.total
				}
				seen.mu.Unlock()
				msg.Ack()
				continue
			}
			recs, err := envelope.Records(msg)
			if err != nil {
				t.Errorf("message %s: %v", msg.UUID, err)
				msg.Ack()
				continue
			}
			if !nacked && len(recs) > 1 && recs[0].Partition == 0 && recs[0].Offset > 100 {
				nacked = true // once: it must come again, whole and in its place
				msg.Nack()
				continue
			}
			seen.mu.Lock()
			seen.sizes = append(seen.sizes, len(recs))
			for _, r := range recs {
				seen.offsets[r.Partition] = append(seen.offsets[r.Partition], r.Offset)
				seen.total++
				if tp := msg.Metadata.Get("traceparent"); tp != "" {
					if len(recs) != 1 {
						t.Errorf("a message of %d records has trace context", len(recs))
					}
					seen.traced[r.Offset] = tp
				}
				if r.Partition == 0 && r.Offset == 1001 && !r.Tombstone() {
					t.Errorf("record 0@1001 is not a tombstone")
				}
			}
			seen.mu.Unlock()
			msg.Ack()
		}
	}()

	want := map[int32][]int64{0: upTo(ends[0]), 1: {0, 1, 2, 4}}
	wantTotal := len(want[0]) + len(want[1])
	waitSeen(t, seen, "every record and CaughtUp", func(s *batchSeen) bool { return s.caughtUp >= 0 && s.total >= wantTotal })
	seen.mu.Lock()
	for p, offsets := range want {
		if got := seen.offsets[p]; !slices.Equal(got, offsets) {
			t.Errorf("partition %d: offsets %v, want %v", p, brief(got), brief(offsets))
		}
	}
	if seen.caughtUp != wantTotal {
		t.Errorf("CaughtUp after %d records, want after all %d", seen.caughtUp, wantTotal)
	}
	if seen.traced[tracedAt] != traceparent {
		t.Errorf("record 0@%d lost its trace context: %v", tracedAt, seen.traced)
	}
	if !nacked {
		t.Error("no message of several records was nacked")
	}
	largest := slices.Max(seen.sizes)
	if largest < 2 || largest > 64 {
		t.Errorf("largest message carried %d records, want 2..64 (sizes %v)", largest, seen.sizes)
	}
	t.Logf("%d records in %d messages", seen.total, len(seen.sizes))
	seen.mu.Unlock()

	// Tailing: new records come after CaughtUp, in order.
	c.Produce(t, topic, 0, 50)
	waitSeen(t, seen, "tailed records", func(s *batchSeen) bool { return len(s.offsets[0]) >= int(ends[0])+50 })
	seen.mu.Lock()
	if got := seen.offsets[0]; !slices.Equal(got, upTo(ends[0]+50)) {
		t.Errorf("partition 0 after tailing: offsets %v", brief(got))
	}
	seen.mu.Unlock()
	deadline := time.Now().Add(wait)
	for {
		hookMu.Lock()
		last := hookLast[0]
		hookMu.Unlock()
		if last == ends[0]+49 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RecordRead's last offset on partition 0 is %d, want %d", last, ends[0]+49)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = reader.Close()
	<-done
}

// TestLogReaderBatchStopsAtEnd checks that with records produced while the
// reader replays, the replay's messages end exactly at the end offset seen
// at start: CaughtUp is never preceded by a record produced after it.
func TestLogReaderBatchStopsAtEnd(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "batch-end")
	c.CreateTopic(t, topic, 1, nil)
	c.Produce(t, topic, 0, 333)
	reader, _ := newLogReader(t, c, func(cfg *kafkalog.ReaderConfig) { cfg.BatchRecords = 1000 })
	ch := subscribe(t, reader, topic)
	// Hold the first message, so that more records are produced while the
	// reader has the rest of the replay fetched.
	var first *message.Message
	select {
	case first = <-ch:
	case <-time.After(wait):
		t.Fatal("no message")
	}
	c.Produce(t, topic, 0, 200)
	time.Sleep(300 * time.Millisecond) // let the consumer fetch them
	first.Ack()
	n := 0
	if recs, err := envelope.Records(first); err == nil {
		n = len(recs)
	}
	deadline := time.After(wait)
	for n < 333+200 {
		select {
		case msg := <-ch:
			if c, _, _, ok := envelope.ControlOf(msg); ok {
				if c == envelope.CaughtUp && n != 333 {
					t.Errorf("CaughtUp after %d records, want after 333", n)
				}
				msg.Ack()
				continue
			}
			recs, err := envelope.Records(msg)
			if err != nil {
				t.Fatal(err)
			}
			if recs[0].Offset != int64(n) {
				t.Fatalf("message starts at offset %d, want %d", recs[0].Offset, n)
			}
			if n < 333 && recs[len(recs)-1].Offset >= 333 {
				t.Errorf("a message spans the start end offset 333: %d..%d", recs[0].Offset, recs[len(recs)-1].Offset)
			}
			n += len(recs)
			msg.Ack()
		case <-deadline:
			t.Fatalf("only %d records came", n)
		}
	}
}

func waitSeen(t *testing.T, s *batchSeen, what string, cond func(*batchSeen) bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		s.mu.Lock()
		ok := cond(s)
		total := s.total
		s.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %d records so far", what, total)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// brief shortens a long offset list for a failure message.
func brief(offsets []int64) string {
	if len(offsets) > 20 {
		return fmt.Sprintf("%v ... %d (%d offsets)", offsets[:10], offsets[len(offsets)-1], len(offsets))
	}
	return fmt.Sprint(offsets)
}

// TestReaderBatchesOnlyWhenBehind checks ReaderConfig.BatchBehind: the
// replay comes in batches; once caught up, a reader that keeps up gets one
// record per message, and one that fell behind catches up in batches; every
// record arrives once, in order.
func TestReaderBatchesOnlyWhenBehind(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "behind")
	c.CreateTopic(t, topic, 1, nil)
	c.Produce(t, topic, 0, 500)

	reader, _ := newLogReader(t, c, func(cfg *kafkalog.ReaderConfig) {
		cfg.BatchRecords = 64
		cfg.BatchBehind = 100
	})
	type delivery struct {
		phase string
		size  int
	}
	var (
		mu       sync.Mutex
		phase    = "replay"
		sizes    []delivery
		offsets  []int64
		caughtUp = make(chan struct{})
		gate     = make(chan struct{}) // closed: the consumer runs
	)
	close(gate)
	setPhase := func(p string, g chan struct{}) {
		mu.Lock()
		phase, gate = p, g
		mu.Unlock()
	}
	ch := subscribe(t, reader, topic)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range ch {
			mu.Lock()
			g := gate
			mu.Unlock()
			<-g
			if ctl, _, _, ok := envelope.ControlOf(msg); ok {
				if ctl == envelope.CaughtUp {
					close(caughtUp)
				}
				msg.Ack()
				continue
			}
			recs, err := envelope.Records(msg)
			if err != nil {
				t.Errorf("message %s: %v", msg.UUID, err)
			}
			mu.Lock()
			sizes = append(sizes, delivery{phase, len(recs)})
			for _, r := range recs {
				offsets = append(offsets, r.Offset)
			}
			mu.Unlock()
			msg.Ack()
		}
	}()
	seenAll := func(n int) {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			mu.Lock()
			got := len(offsets)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("saw %d records, want %d", got, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	<-caughtUp
	seenAll(500)

	setPhase("keeping up", gate)
	for i := range 10 {
		c.Produce(t, topic, 0, 1)
		seenAll(501 + i)
	}
	c.Produce(t, topic, 0, 50) // fetched together, but less than 100 behind
	seenAll(560)

	held := make(chan struct{})
	setPhase("behind", held)
	c.Produce(t, topic, 0, 2000)
	time.Sleep(500 * time.Millisecond) // let the consumer fetch and see the high watermark
	close(held)
	seenAll(2560)

	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(offsets, upTo(2560)) {
		t.Errorf("offsets %v, want 0..2559 once each in order", brief(offsets))
	}
	largest := map[string]int{}
	for _, d := range sizes {
		largest[d.phase] = max(largest[d.phase], d.size)
	}
	if largest["replay"] < 2 || largest["keeping up"] != 1 || largest["behind"] < 2 || largest["behind"] > 64 {
		t.Errorf("largest message per phase %v: want batches while replaying and behind (at most 64), single records while keeping up", largest)
	}
	t.Logf("largest message per phase: %v", largest)
	_ = reader.Close()
	<-done
}

// TestLogReaderBatchesWithHeaders: records whose headers carry no sampled
// trace context travel in batches with their headers, and a sampled one
// still gets a message of its own with its trace context as metadata.
func TestLogReaderBatchesWithHeaders(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "batchhdr")
	c.CreateTopic(t, topic, 1, nil)
	const n = 300
	var tracedAt int64
	for i := 0; i < n; i++ {
		headers := map[string]string{envelope.HeaderCommitTime: fmt.Sprint(1000 + i)}
		if i == n/2 {
			headers["traceparent"] = traceparent
		} else if i%2 == 0 {
			headers["traceparent"] = unsampledTraceparent
		}
		at := produce(t, c, topic, 0, fmt.Sprint("k", i), "v", headers)
		if i == n/2 {
			tracedAt = at
		}
	}
	reader, _ := newLogReader(t, c, func(cfg *kafkalog.ReaderConfig) { cfg.BatchRecords = 64 })
	ch := subscribe(t, reader, topic)
	seen, largest := 0, 0
	deadline := time.After(wait)
	for seen < n {
		var msg *message.Message
		select {
		case msg = <-ch:
		case <-deadline:
			t.Fatalf("%d of %d records seen", seen, n)
		}
		if _, _, _, ok := envelope.ControlOf(msg); ok {
			msg.Ack()
			continue
		}
		recs, err := envelope.Records(msg)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(recs))
		for _, r := range recs {
			headers := r.Headers
			if !envelope.IsBatch(msg) {
				headers = msg.Metadata
			}
			if want := fmt.Sprint(1000 + seen); headers[envelope.HeaderCommitTime] != want {
				t.Errorf("record %d: commit-time header %q, want %q", r.Offset, headers[envelope.HeaderCommitTime], want)
			}
			if r.Offset == tracedAt && (len(recs) != 1 || msg.Metadata.Get("traceparent") != traceparent) {
				t.Errorf("traced record %d came in a message of %d records, trace context %q", r.Offset, len(recs), msg.Metadata.Get("traceparent"))
			}
			seen++
		}
		msg.Ack()
	}
	if largest < 2 {
		t.Errorf("records with headers never shared a message")
	}
	_ = reader.Close()
}

const unsampledTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
