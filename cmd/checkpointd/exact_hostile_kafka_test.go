package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// hostileTopic is one single-partition topic of TestExactHostileOnKafka,
// the offsets its groups commit, and the fallbacks allowed besides exact.
type hostileTopic struct {
	name, remote string
	end          int64
	commits      []int64
	fallback     string // the reason at least one commit must fall back with; "" for none
}

// TestExactHostileOnKafka runs real MM2 over topics where the records cannot
// always prove a position: aborted and committed transactions on the
// source, a compacted source topic, a target topic stamping LogAppendTime,
// and a record duplicated on the target (a producer retry). Every commit's
// --exact translation is either exact or MM2's with the expected reason,
// and none lets a consumer skip a record; the duplicate costs no replay.
func TestExactHostileOnKafka(t *testing.T) {
	t.Parallel()
	var topics map[string]*hostileTopic
	e := newExactBed(t, 1, func(e *exactBed) {
		topics = map[string]*hostileTopic{}
		for _, kind := range []string{"txn", "cmp", "lat", "dup"} {
			name := kind + "-" + e.suffix
			topics[kind] = &hostileTopic{name: name, remote: e.src + "." + name}
		}
		src := e.bed.Source
		src.CreateTopic(t, topics["txn"].name, 1, nil)
		src.CreateTopic(t, topics["cmp"].name, 1, map[string]string{"cleanup.policy": "compact", "segment.ms": "200",
			"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100", "min.compaction.lag.ms": "0"})
		src.CreateTopic(t, topics["lat"].name, 1, nil)
		src.CreateTopic(t, topics["dup"].name, 1, nil)
		// MM2 does not copy message.timestamp.type; a target made beforehand
		// keeps it.
		e.bed.Target.CreateTopic(t, topics["lat"].remote, 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	})
	produce := func(topic string, n int, key func(off int64) string, ts time.Time) {
		t.Helper()
		h := topics[strings.SplitN(topic, "-", 2)[0]]
		msgs := make([]*sarama.ProducerMessage, n)
		for i := range msgs {
			off := h.end + int64(i)
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key(off)), Value: sarama.StringEncoder(fmt.Sprintf("0/%d", off)), Timestamp: ts}
		}
		if err := e.producer.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if m.Offset != h.end+int64(i) {
				t.Fatalf("%s: record %d at %d, want %d", topic, i, m.Offset, h.end+int64(i))
			}
		}
		h.end += int64(n)
	}
	plainKey := func(off int64) string { return fmt.Sprintf("k%d", off) }

	// Transactions: 20 plain records, 5 aborted (20-24, marker 25), 5
	// committed (26-30, marker 31), 20 plain (32-51).
	txn := topics["txn"]
	produce(txn.name, 20, plainKey, time.Time{})
	produceTxnValues(t, e.bed.Source, txn.name, 20, 5, false)
	produceTxnValues(t, e.bed.Source, txn.name, 26, 5, true)
	txn.end = 32
	produce(txn.name, 20, plainKey, time.Time{})
	txn.commits, txn.fallback = []int64{10, 22, 28, 40, 52}, "transactional"

	// Compaction: 300 records over 10 keys, copied before the cleaner runs.
	cmp := topics["cmp"]
	produce(cmp.name, 300, func(off int64) string { return fmt.Sprintf("k%d", off%10) }, time.Time{})
	cmp.commits, cmp.fallback = []int64{50, 150, 250}, "compacted"

	// LogAppendTime on the target: the source's timestamps are a day old.
	lat := topics["lat"]
	produce(lat.name, 100, plainKey, time.Now().Add(-24*time.Hour))
	lat.commits, lat.fallback = []int64{30, 70, 100}, "log_append_time"

	// A retry on the target: record 49 written there twice.
	dup := topics["dup"]
	produce(dup.name, 50, plainKey, time.Time{})
	e.waitCopied(t, dup.remote, []int64{50})
	last := e.bed.Source.ReadAll(t, dup.name)[49]
	cfg := e.bed.Target.SaramaConfig()
	cfg.Producer.Return.Successes = true
	tp, err := sarama.NewSyncProducer(e.bed.Target.Brokers(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, off, err := tp.SendMessage(&sarama.ProducerMessage{Topic: dup.remote, Key: sarama.ByteEncoder(last.Key), Value: sarama.ByteEncoder(last.Value), Timestamp: last.Timestamp}); err != nil || off != 50 {
		t.Fatalf("duplicate on the target at %d: %v", off, err)
	}
	tp.Close()
	produce(dup.name, 50, plainKey, time.Time{})
	dup.commits = []int64{49, 50, 75, 100}

	// Copied: the target holds the source's last record (not the same
	// offset everywhere: the transaction markers, and maybe the aborted
	// records, are not copied).
	for _, h := range topics {
		kafkatest.WaitFor(t, 90*time.Second, "MM2 to copy "+h.name, func() error {
			for _, src := range e.origins(t, h.remote, 1)[0] {
				if src == h.end-1 {
					return nil
				}
			}
			return fmt.Errorf("no copy of source offset %d", h.end-1)
		})
	}
	// Roll the compacted topic's segment, so the cleaner takes the rest.
	time.Sleep(300 * time.Millisecond)
	produce(cmp.name, 1, func(int64) string { return "k0" }, time.Time{})
	kafkatest.WaitFor(t, 90*time.Second, "the source's cleaner to compact "+cmp.name, func() error {
		if n := len(e.bed.Source.ReadAll(t, cmp.name)); n > 50 {
			return fmt.Errorf("%d records left", n)
		}
		return nil
	})

	var groups []string
	committed := map[string]map[int32]int64{}
	topicOf := map[string]*hostileTopic{}
	for _, kind := range []string{"txn", "cmp", "lat", "dup"} {
		h := topics[kind]
		for _, c := range h.commits {
			g := fmt.Sprintf("%s%s-%d", strings.TrimSuffix(e.groupRe, ".*"), kind, c)
			e.bed.Source.CommitOffsets(t, g, map[messages.TopicPartition]int64{{Topic: h.name, Partition: 0}: c})
			groups = append(groups, g)
			committed[g] = map[int32]int64{0: c}
			topicOf[g] = h
		}
	}
	mm2 := e.waitCheckpoints(t, groups, committed)

	args := []string{"translate", "--config", e.cfgPath, "--exact", "--format", "json"}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var rows []exactOffset
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("translate --exact output %q: %v", out, err)
	}
	if len(rows) != len(groups) {
		t.Errorf("%d rows for %d groups", len(rows), len(groups))
	}
	origins := map[*hostileTopic]map[int64]int64{}
	for _, h := range topics {
		origins[h] = e.origins(t, h.remote, 1)[0]
	}
	reasons := map[*hostileTopic][]string{}
	for _, r := range rows {
		h, c := topicOf[r.Group], committed[r.Group][0]
		reasons[h] = append(reasons[h], r.Exact)
		rep, skip := failoverCost(origins[h], c, r.DownstreamOffset)
		mrep, _ := failoverCost(origins[h], c, mm2[r.Group][0])
		t.Logf("%s committed %d of %d: %s (%s) at %d, %d replayed, %d skipped; MM2's %d, %d replayed",
			h.name, c, h.end, r.Exact, r.ExactDetail, r.DownstreamOffset, rep, skip, mm2[r.Group][0], mrep)
		if skip != 0 {
			t.Errorf("%s: --exact at %d skips %d records", r.Group, r.DownstreamOffset, skip)
		}
		switch {
		case r.Exact == "exact" && rep != 0:
			t.Errorf("%s: exact at %d replays %d records", r.Group, r.DownstreamOffset, rep)
		case r.Exact != "exact" && (r.Exact != h.fallback || r.DownstreamOffset != r.MM2DownstreamOffset):
			t.Errorf("%s: %s at %d, want exact or %s at MM2's %d", r.Group, r.Exact, r.DownstreamOffset, h.fallback, r.MM2DownstreamOffset)
		}
	}
	for _, h := range topics {
		if h.fallback != "" && !slices.Contains(reasons[h], h.fallback) {
			t.Errorf("%s: no commit fell back with %s: %v", h.name, h.fallback, reasons[h])
		}
	}
}

// produceTxnValues writes n records to partition 0 of topic in one
// transaction, valued as produce values them from offset first on, and
// commits or aborts it.
func produceTxnValues(t *testing.T, c *kafkatest.Cluster, topic string, first int64, n int, commit bool) {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Transaction.ID = kafkatest.UniqueName(t, "txn")
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(c.Brokers(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		off := first + int64(i)
		if _, got, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", off)),
			Value: sarama.StringEncoder(fmt.Sprintf("0/%d", off))}); err != nil || got != off {
			t.Fatalf("transactional record at %d, want %d: %v", got, off, err)
		}
	}
	if commit {
		err = p.CommitTxn()
	} else {
		err = p.AbortTxn()
	}
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.WaitFor(t, 10*time.Second, "the transaction marker of "+topic, func() error {
		if end := c.EndOffsets(t, topic)[0]; end < first+int64(n)+1 {
			return fmt.Errorf("end %d", end)
		}
		return nil
	})
}
