package kafkalog_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

// wait bounds every wait for a message in these tests.
const wait = 30 * time.Second

// readerConfig is a reader config for cluster with test-sized pauses.
func readerConfig(t *testing.T, c *kafkatest.Cluster, log *slog.Logger) kafkalog.ReaderConfig {
	return kafkalog.ReaderConfig{
		Brokers:         []string{c.Bootstrap},
		Sarama:          c.SaramaConfig(),
		Cluster:         c.Alias,
		Logger:          log,
		NackResendDelay: 20 * time.Millisecond,
		RetryBackoff:    50 * time.Millisecond,
		MaxRetryBackoff: 500 * time.Millisecond,
		ProbeInterval:   200 * time.Millisecond,
	}
}

// event is one delivered message as a test sees it.
type event struct {
	control   envelope.Control // "" for a record
	partition int32
	offset    int64
	key       string
	value     string
	tombstone bool
	meta      message.Metadata
}

func (e event) String() string {
	if e.control != "" {
		return fmt.Sprintf("%s(%d)", e.control, e.partition)
	}
	return fmt.Sprintf("%d@%d", e.partition, e.offset)
}

func describe(t *testing.T, topic string, msg *message.Message) event {
	if c, tp, p, ok := envelope.ControlOf(msg); ok {
		if tp != topic {
			t.Errorf("control %s for topic %q, want %q", c, tp, topic)
		}
		return event{control: c, partition: p}
	}
	rec, err := envelope.ToRecord(msg)
	if err != nil {
		t.Errorf("not a record message: %v", err) // not Fatal: runs off the test goroutine
		return event{control: "invalid"}
	}
	if rec.Topic != topic {
		t.Errorf("record of topic %q, want %q", rec.Topic, topic)
	}
	return event{partition: rec.Partition, offset: rec.Offset, key: string(rec.Key), value: string(rec.Value),
		tombstone: rec.Tombstone(), meta: msg.Metadata}
}

// collector reads a subscription in the background, acks what it reads
// (unless react says otherwise) and keeps what it saw.
type collector struct {
	t     *testing.T
	topic string

	mu     sync.Mutex
	events []event
	closed bool
	change chan struct{} // closed and replaced on every change
}

// collect starts reading ch. react, if set, sees each message first and
// returns whether to ack it (false nacks it).
func collect(t *testing.T, topic string, ch <-chan *message.Message, react func(event) bool) *collector {
	c := &collector{t: t, topic: topic, change: make(chan struct{})}
	go func() {
		for msg := range ch {
			e := describe(t, topic, msg)
			if react != nil && !react(e) {
				msg.Nack()
				continue
			}
			c.mu.Lock()
			c.events = append(c.events, e)
			c.signal()
			c.mu.Unlock()
			msg.Ack()
		}
		c.mu.Lock()
		c.closed = true
		c.signal()
		c.mu.Unlock()
	}()
	return c
}

func (c *collector) signal() {
	close(c.change)
	c.change = make(chan struct{})
}

// waitFor waits until cond holds for what has been collected and returns it.
func (c *collector) waitFor(what string, cond func([]event) bool) []event {
	c.t.Helper()
	deadline := time.After(wait)
	for {
		c.mu.Lock()
		events, closed, change := append([]event(nil), c.events...), c.closed, c.change
		c.mu.Unlock()
		if cond(events) {
			return events
		}
		if closed {
			c.t.Fatalf("subscription closed while waiting for %s; got %v", what, events)
		}
		select {
		case <-change:
		case <-deadline:
			c.t.Fatalf("no %s within %s; got %v", what, wait, events)
		}
	}
}

// snapshot returns what has been collected so far.
func (c *collector) snapshot() []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.events...)
}

// waitClosed waits until the subscription's channel is closed.
func (c *collector) waitClosed() []event {
	c.t.Helper()
	c.waitForClose()
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.events...)
}

func (c *collector) waitForClose() {
	c.t.Helper()
	deadline := time.After(wait)
	for {
		c.mu.Lock()
		closed, change := c.closed, c.change
		c.mu.Unlock()
		if closed {
			return
		}
		select {
		case <-change:
		case <-deadline:
			c.t.Fatalf("subscription not closed within %s", wait)
		}
	}
}

func count(events []event, keep func(event) bool) int {
	n := 0
	for _, e := range events {
		if keep(e) {
			n++
		}
	}
	return n
}

func isControl(c envelope.Control, p int32) func(event) bool {
	return func(e event) bool { return e.control == c && e.partition == p }
}

// produce writes one record with headers and returns its offset.
func produce(t *testing.T, c *kafkatest.Cluster, topic string, partition int32, key, value string, headers map[string]string) int64 {
	t.Helper()
	producer, err := sarama.NewSyncProducer([]string{c.Bootstrap}, c.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	pm := &sarama.ProducerMessage{Topic: topic, Partition: partition, Key: sarama.StringEncoder(key)}
	if value != "" {
		pm.Value = sarama.StringEncoder(value)
	}
	for k, v := range headers {
		pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
	}
	if _, _, err := producer.SendMessage(pm); err != nil {
		t.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
	return pm.Offset
}

// produceTxn writes n records with values prefix-0, prefix-1, ... to one
// partition in a transaction and commits or aborts it. The coordinator
// writes the transaction's marker after it answers, so another producer's
// records may land before the marker.
func produceTxn(t *testing.T, c *kafkatest.Cluster, topic string, partition int32, prefix string, n int, commit bool) {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = kafkatest.UniqueName(t, "txn")
	cfg.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer([]string{c.Bootstrap}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if err := producer.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		pm := &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))}
		if _, _, err := producer.SendMessage(pm); err != nil {
			t.Fatalf("produce in transaction: %v", err)
		}
	}
	if commit {
		err = producer.CommitTxn()
	} else {
		err = producer.AbortTxn()
	}
	if err != nil {
		t.Fatalf("end transaction (commit=%v): %v", commit, err)
	}
}

// logBuffer collects log lines and echoes them to the test log.
type logBuffer struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func newLog(t *testing.T) (*slog.Logger, *logBuffer) {
	lb := &logBuffer{t: t}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	return len(p), nil
}

// lines returns the log lines that contain all of subs.
func (l *logBuffer) lines(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.b.String()) {
		match := true
		for _, s := range subs {
			match = match && strings.Contains(line, s)
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}

// dump writes the collected log to the test log when the test fails.
func (l *logBuffer) dumpOnFailure() {
	l.t.Cleanup(func() {
		if l.t.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.t.Logf("reader log:\n%s", l.b.String())
		}
	})
}

func subscribe(t *testing.T, sub message.Subscriber, topic string) <-chan *message.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
