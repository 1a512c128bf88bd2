package kafkalog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

func ptr[T any](v T) *T { return &v }

func TestEnsureTopic(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Target
	admin := c.Admin(t)
	topic := kafkatest.UniqueName(t, "checkpoints")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	compact := map[string]*string{"cleanup.policy": ptr("compact")}

	for range 2 { // the second call finds it there
		if err := kafkalog.EnsureTopic(ctx, admin, topic, 1, 1, compact); err != nil {
			t.Fatal(err)
		}
	}
	md, err := admin.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || !errors.Is(md[0].Err, sarama.ErrNoError) || len(md[0].Partitions) != 1 {
		t.Fatalf("describe %s: %+v, %v; want one topic with one partition", topic, md, err)
	}
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"cleanup.policy"}})
	if err != nil || len(entries) != 1 || entries[0].Value != "compact" {
		t.Errorf("cleanup.policy of %s: %+v, %v; want compact", topic, entries, err)
	}
}

func TestCheckpointPublisherWritesMM2Records(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Target
	topic := kafkatest.UniqueName(t, "checkpoints")
	c.CreateTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})

	log, lb := newLog(t)
	lb.dumpOnFailure()
	pub, err := kafkalog.NewCheckpointPublisher([]string{c.Bootstrap}, c.SaramaConfig(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	type record struct {
		key, value []byte
		headers    map[string]string
	}
	want := []record{
		{key: []byte{0, 0, 0, 2, 'g', '1'}, value: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 0xff}},
		{key: []byte("k2"), value: []byte("v2"), headers: map[string]string{"traceparent": traceparent, "tracestate": "a=b"}},
	}
	var msgs []*message.Message
	for i, r := range want {
		msg := message.NewMessage("uuid-"+string(rune('a'+i)), r.value)
		msg.Metadata.Set(envelope.MetaKey, string(r.key))
		msg.Metadata.Set("correlation_id", "dropped")
		for k, v := range r.headers {
			msg.Metadata.Set(k, v)
		}
		msgs = append(msgs, msg)
	}
	if err := pub.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}

	got := c.ReadAll(t, topic)
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i, m := range got {
		w := want[i]
		if m.Partition != 0 || !bytes.Equal(m.Key, w.key) || !bytes.Equal(m.Value, w.value) {
			t.Errorf("record %d: partition %d key %x value %x; want 0, %x, %x", i, m.Partition, m.Key, m.Value, w.key, w.value)
		}
		headers := map[string]string{}
		for _, h := range m.Headers {
			headers[string(h.Key)] = string(h.Value)
		}
		if len(headers) != len(w.headers) || len(m.Headers) != len(w.headers) {
			t.Errorf("record %d: headers %v, want exactly %v", i, headers, w.headers)
		}
		for k, v := range w.headers {
			if headers[k] != v {
				t.Errorf("record %d: header %s = %q, want %q", i, k, headers[k], v)
			}
		}
	}
	if lines := lb.lines("idempotent"); len(lines) != 0 {
		t.Errorf("the test cluster allows idempotence, yet: %q", lines)
	}
}

// One Publish call with many checkpoints is written in produce requests of
// many records each, not one request per record.
func TestCheckpointPublisherBatches(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Target
	topic := kafkatest.UniqueName(t, "checkpoints")
	c.CreateTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})
	cfg := c.SaramaConfig()
	pub, err := kafkalog.NewCheckpointPublisher([]string{c.Bootstrap}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	const n = 5000
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = message.NewMessage(fmt.Sprint(i), []byte(fmt.Sprint("value-", i)))
		msgs[i].Metadata.Set(envelope.MetaKey, fmt.Sprint("key-", i))
	}
	if err := pub.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	if got := len(c.ReadAll(t, topic)); got != n {
		t.Fatalf("read %d records, want %d", got, n)
	}
	// sarama's per-topic histogram of records per produce request.
	name := "records-per-request-for-topic-" + strings.ReplaceAll(topic, ".", "_")
	h, ok := cfg.MetricRegistry.Get(name).(interface {
		Count() int64
		Max() int64
	})
	if !ok {
		t.Fatalf("sarama registered no %s histogram", name)
	}
	if h.Count() >= n/10 || h.Max() < 100 {
		t.Errorf("%d records went out in %d produce requests (largest %d records): want batches", n, h.Count(), h.Max())
	}
	t.Logf("%d records in %d produce requests, largest %d", n, h.Count(), h.Max())
}

// A closed publisher says so instead of writing.
func TestCheckpointPublisherClosed(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Target
	pub, err := kafkalog.NewCheckpointPublisher([]string{c.Bootstrap}, c.SaramaConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	msg := message.NewMessage("1", []byte("v"))
	msg.Metadata.Set(envelope.MetaKey, "k")
	if err := pub.Publish("t", msg); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Publish after Close: %v, want an error saying it is closed", err)
	}
}

// The check a writer puts on the first message's context is asked right
// before the records leave: refused, nothing is written.
func TestCheckpointPublisherAsksBeforeSending(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Target
	topic := kafkatest.UniqueName(t, "checkpoints")
	c.CreateTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})
	pub, err := kafkalog.NewCheckpointPublisher([]string{c.Bootstrap}, c.SaramaConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	errMoved := errors.New("shard moved")
	for _, refuse := range []bool{true, false} {
		msg := message.NewMessage("1", []byte("v"))
		msg.Metadata.Set(envelope.MetaKey, "k")
		msg.SetContext(targetgroup.WithBeforeSend(context.Background(), func(context.Context) error {
			if refuse {
				return errMoved
			}
			return nil
		}))
		err := pub.Publish(topic, msg)
		if refuse != errors.Is(err, errMoved) {
			t.Fatalf("refuse=%v: Publish = %v", refuse, err)
		}
	}
	if got := len(c.ReadAll(t, topic)); got != 1 {
		t.Fatalf("read %d records, want the one whose check passed", got)
	}
}
