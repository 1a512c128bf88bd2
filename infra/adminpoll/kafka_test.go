package adminpoll_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/adminpoll"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

const interval = 200 * time.Millisecond

// prefix keeps the groups whose id starts with it: the shared cluster holds
// other tests' groups too.
type prefix string

func (p prefix) Match(group string) bool { return strings.HasPrefix(group, string(p)) }

// source is one test's groups on the shared source cluster.
type source struct {
	cluster *kafkatest.Cluster
	topic   string
	prefix  string
}

func newSource(t *testing.T) source {
	t.Helper()
	bed := kafkatest.Shared(t)
	s := source{cluster: bed.Source, topic: kafkatest.UniqueName(t, "orders"), prefix: kafkatest.UniqueName(t, "g") + "-"}
	bed.Source.CreateTopic(t, s.topic, 2, nil)
	return s
}

func (s source) group(name string) string { return s.prefix + name }

func (s source) tp(p int32) messages.TopicPartition {
	return messages.TopicPartition{Topic: s.topic, Partition: p}
}

func (s source) subscribe(t *testing.T) (*adminpoll.Subscriber, <-chan *message.Message) {
	t.Helper()
	sub, err := adminpoll.New(adminpoll.Config{
		Client:   s.cluster.Client(t),
		Groups:   prefix(s.prefix),
		Interval: interval,
		Logger:   slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	ch, err := sub.Subscribe(ctx, adminpoll.Topic)
	if err != nil {
		t.Fatal(err)
	}
	return sub, ch
}

// seen is a delivered message: a control signal or a decoded commit record.
type seen struct {
	control envelope.Control
	commit  string // "group topic-partition=offset/metadata", or "... deleted"
}

func (s seen) String() string {
	if s.control != "" {
		return string(s.control)
	}
	return s.commit
}

func (s source) commit(name string, p int32, offset int64) seen {
	return seen{commit: fmt.Sprintf("%s %s=%d/", s.group(name), s.tp(p), offset)}
}

func (s source) deleted(name string, p int32) seen {
	return seen{commit: fmt.Sprintf("%s %s deleted", s.group(name), s.tp(p))}
}

// next takes one message, acks it and describes it.
func next(t *testing.T, ch <-chan *message.Message) seen {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		msg.Ack()
		return describe(t, msg)
	case <-time.After(30 * time.Second):
		t.Fatal("no message within 30s")
	}
	return seen{}
}

func describe(t *testing.T, msg *message.Message) seen {
	t.Helper()
	if c, topic, partition, ok := envelope.ControlOf(msg); ok {
		if topic != adminpoll.Topic || partition != 0 {
			t.Errorf("control %s for %s/%d, want %s/0", c, topic, partition, adminpoll.Topic)
		}
		return seen{control: c}
	}
	rec, err := envelope.ToRecord(msg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := messages.DecodeOffsetsRecord(rec.Key, rec.Value)
	if err != nil {
		t.Fatalf("record is not a __consumer_offsets commit: %v", err)
	}
	if r.Kind != messages.OffsetCommitRecord || rec.Topic != adminpoll.Topic {
		t.Fatalf("record %+v on %s", r, rec.Topic)
	}
	if r.Tombstone {
		return seen{commit: fmt.Sprintf("%s %s deleted", r.Group, r.TopicPartition)}
	}
	return seen{commit: fmt.Sprintf("%s %s=%d/%s", r.Group, r.TopicPartition, r.Offset, r.Metadata)}
}

// nextN takes n messages and returns them sorted, since the order of
// groups and partitions within one poll is not the test's business.
func nextN(t *testing.T, ch <-chan *message.Message, n int) []seen {
	t.Helper()
	got := make([]seen, n)
	for i := range got {
		got[i] = next(t, ch)
	}
	slices.SortFunc(got, func(a, b seen) int { return strings.Compare(a.String(), b.String()) })
	return got
}

func sorted(ss ...seen) []seen {
	slices.SortFunc(ss, func(a, b seen) int { return strings.Compare(a.String(), b.String()) })
	return ss
}

// quiet checks that nothing more arrives for a few poll intervals.
func quiet(t *testing.T, ch <-chan *message.Message) {
	t.Helper()
	select {
	case msg := <-ch:
		msg.Ack()
		t.Fatalf("unexpected message %v", describe(t, msg))
	case <-time.After(5 * interval):
	}
}

func TestPollDeliversOnlyChanges(t *testing.T) {
	src := newSource(t)
	src.cluster.CommitOffsets(t, src.group("a"), map[messages.TopicPartition]int64{src.tp(0): 5, src.tp(1): 7})
	src.cluster.CommitOffsets(t, src.group("b"), map[messages.TopicPartition]int64{src.tp(0): 3})
	src.cluster.CommitOffsets(t, "not-"+src.group("c"), map[messages.TopicPartition]int64{src.tp(0): 1}) // filtered out
	sub, ch := src.subscribe(t)

	if got := next(t, ch); got.control != envelope.Assigned {
		t.Fatalf("first message %v, want %s", got, envelope.Assigned)
	}
	want := sorted(src.commit("a", 0, 5), src.commit("a", 1, 7), src.commit("b", 0, 3))
	if got := nextN(t, ch, 3); !slices.Equal(got, want) {
		t.Fatalf("first poll delivered\n%v\nwant\n%v", got, want)
	}
	if got := next(t, ch); got.control != envelope.CaughtUp {
		t.Fatalf("after the first poll %v, want %s", got, envelope.CaughtUp)
	}
	quiet(t, ch)

	src.cluster.CommitOffsets(t, src.group("a"), map[messages.TopicPartition]int64{src.tp(0): 9})
	if got, want := next(t, ch), src.commit("a", 0, 9); got != want {
		t.Fatalf("after a commit: %v, want %v", got, want)
	}
	quiet(t, ch)

	admin := src.cluster.Admin(t)
	if err := admin.DeleteConsumerGroupOffset(src.group("a"), src.topic, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := next(t, ch), src.deleted("a", 1); got != want {
		t.Fatalf("after deleting one offset: %v, want %v", got, want)
	}
	if err := admin.DeleteConsumerGroup(src.group("b")); err != nil {
		t.Fatal(err)
	}
	if got, want := next(t, ch), src.deleted("b", 0); got != want {
		t.Fatalf("after deleting a group: %v, want %v", got, want)
	}
	quiet(t, ch)

	st := sub.Stats()
	if st.Records != 6 || st.GroupFailures != 0 || st.ListFailures != 0 || st.Polls < 5 {
		t.Errorf("stats %+v, want 6 records over at least 5 polls and no failures", st)
	}
}

func TestPollResendsNackedMessages(t *testing.T) {
	src := newSource(t)
	src.cluster.CommitOffsets(t, src.group("a"), map[messages.TopicPartition]int64{src.tp(0): 5})
	sub, ch := src.subscribe(t)
	if got := next(t, ch); got.control != envelope.Assigned {
		t.Fatalf("first message %v", got)
	}

	first := <-ch
	first.Nack()
	again := <-ch
	if again.UUID != first.UUID || describe(t, again) != src.commit("a", 0, 5) {
		t.Fatalf("after a nack got %s (%v), want %s again", again.UUID, describe(t, again), first.UUID)
	}
	again.Ack()
	if got := next(t, ch); got.control != envelope.CaughtUp {
		t.Fatalf("after the record %v, want %s", got, envelope.CaughtUp)
	}
	if n := sub.Stats().Nacks; n != 1 {
		t.Errorf("Nacks = %d, want 1", n)
	}
}

func TestSubscribeAndClose(t *testing.T) {
	src := newSource(t)
	sub, ch := src.subscribe(t)
	if _, err := sub.Subscribe(t.Context(), adminpoll.Topic); err == nil {
		t.Error("a second subscription must be refused")
	}
	if got := next(t, ch); got.control != envelope.Assigned {
		t.Fatalf("first message %v", got)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	for msg := range ch { // drains to the close
		msg.Ack()
	}
	if _, err := sub.Subscribe(t.Context(), adminpoll.Topic); err == nil {
		t.Error("subscribing after Close must fail")
	}
}

func TestSubscribeRefusesOtherTopics(t *testing.T) {
	sub, err := adminpoll.New(adminpoll.Config{Client: kafkatest.Shared(t).Source.Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := sub.Subscribe(t.Context(), "__consumer_offsets"); err == nil {
		t.Error("want an error for a topic other than adminpoll.Topic")
	}
}

// testWriter sends log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
