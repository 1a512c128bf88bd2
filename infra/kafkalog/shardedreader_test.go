package kafkalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

func newShardedReader(t *testing.T, c *kafkatest.Cluster, group string, rebalance kafkalog.Rebalance, filter func(*sarama.ConsumerMessage) bool) (*kafkalog.ShardedReader, *logBuffer) {
	t.Helper()
	log, lb := newLog(t)
	lb.dumpOnFailure()
	cfg := readerConfig(t, c, log)
	cfg.Sarama.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond // notice rebalances quickly
	cfg.Filter = filter
	reader, err := kafkalog.NewShardedReader(kafkalog.ShardedReaderConfig{
		ReaderConfig:     cfg,
		GroupID:          group,
		Rebalance:        rebalance,
		SessionTimeout:   6 * time.Second, // the broker's minimum
		RebalanceTimeout: 10 * time.Second,
		RevokeTimeout:    5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Close() })
	return reader, lb
}

// ownership plays the handlers of every member: it checks, as messages
// arrive, that no partition is owned by two members at once and that only
// a partition's owner gets its records.
type ownership struct {
	t     *testing.T
	mu    sync.Mutex
	owner map[int32]string
}

func (o *ownership) react(member string) func(event) bool {
	return func(e event) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		cur, owned := o.owner[e.partition]
		switch {
		case e.control == envelope.Assigned:
			if owned {
				o.t.Errorf("partition %d assigned to %s while %s owns it", e.partition, member, cur)
			}
			o.owner[e.partition] = member
		case cur != member:
			o.t.Errorf("%s got %v for partition %d, owned by %q", member, e, e.partition, cur)
		case e.control == envelope.Revoked:
			delete(o.owner, e.partition)
		}
		return true
	}
}

// owned returns the partitions member owns now.
func (o *ownership) owned(member string) []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ps []int32
	for p, m := range o.owner {
		if m == member {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// claim is one Assigned..Revoked run of a partition on one member.
type claim struct {
	partition int32
	events    []event // Assigned first; Revoked last if the claim ended
}

func (c claim) caughtUp() bool { return count(c.events, isControl(envelope.CaughtUp, c.partition)) > 0 }
func (c claim) ended() bool    { return c.events[len(c.events)-1].control == envelope.Revoked }

// claims splits one member's messages into claims, in order.
func claims(t *testing.T, events []event) []claim {
	t.Helper()
	open := map[int32]int{} // partition -> index in out
	var out []claim
	for _, e := range events {
		i, ok := open[e.partition]
		if e.control == envelope.Assigned {
			if ok {
				t.Errorf("partition %d assigned twice without Revoked", e.partition)
			}
			open[e.partition] = len(out)
			out = append(out, claim{partition: e.partition, events: []event{e}})
			continue
		}
		if !ok {
			t.Errorf("%v outside a claim", e)
			continue
		}
		out[i].events = append(out[i].events, e)
		if e.control == envelope.Revoked {
			delete(open, e.partition)
		}
	}
	return out
}

// checkClaim checks one claim: Assigned, every record below end from the
// oldest offset on, CaughtUp once, then records in order, Revoked last.
func checkClaim(t *testing.T, c claim, end int64) {
	t.Helper()
	caughtUp := -1
	var offsets []int64
	for i, e := range c.events[1:] {
		switch e.control {
		case envelope.CaughtUp:
			if caughtUp >= 0 {
				t.Errorf("partition %d: CaughtUp twice in one claim: %v", c.partition, c.events)
			}
			caughtUp = len(offsets)
		case envelope.Revoked:
			if i != len(c.events)-2 {
				t.Errorf("partition %d: Revoked before the claim's end: %v", c.partition, c.events)
			}
		case "":
			offsets = append(offsets, e.offset)
		default:
			t.Errorf("partition %d: unexpected %v", c.partition, e)
		}
	}
	if caughtUp < 0 {
		if c.ended() {
			return // a claim may end before it catches up
		}
		t.Errorf("partition %d: no CaughtUp: %v", c.partition, c.events)
		return
	}
	if !slices.Equal(offsets[:caughtUp], upTo(end)) {
		t.Errorf("partition %d: records before CaughtUp %v, want %v", c.partition, offsets[:caughtUp], upTo(end))
	}
	if !slices.IsSorted(offsets) {
		t.Errorf("partition %d: records out of order: %v", c.partition, offsets)
	}
}

// current returns each partition's open claim among a member's messages.
func current(t *testing.T, events []event) map[int32]claim {
	out := map[int32]claim{}
	for _, c := range claims(t, events) {
		if !c.ended() {
			out[c.partition] = c
		}
	}
	return out
}

// settledOn holds when a member has n claims, all caught up.
func settledOn(t *testing.T, n int) func([]event) bool {
	return func(es []event) bool {
		cur := current(t, es)
		for _, c := range cur {
			if !c.caughtUp() {
				return false
			}
		}
		return len(cur) == n
	}
}

// joinSecond subscribes readerB beside a, which owns all four partitions,
// and waits until both members settle with two caught-up partitions each.
func joinSecond(t *testing.T, readerB *kafkalog.ShardedReader, topic string, a *collector, own *ownership) (*collector, context.CancelFunc) {
	t.Helper()
	ctxB, stopB := context.WithCancel(context.Background())
	chB, err := readerB.Subscribe(ctxB, topic)
	if err != nil {
		stopB()
		t.Fatal(err)
	}
	b := collect(t, topic, chB, own.react("b"))
	deadline := time.Now().Add(wait)
	for !(settledOn(t, 2)(a.snapshot()) && settledOn(t, 2)(b.snapshot())) {
		if time.Now().After(deadline) {
			stopB()
			t.Fatalf("members did not settle on 2+2 caught-up partitions: a %v, b %v", a.snapshot(), b.snapshot())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return b, stopB
}

func TestShardedReaderSharesPartitionsAndReplaysOnHandoff(t *testing.T) {
	t.Parallel()
	for _, rebalance := range []kafkalog.Rebalance{kafkalog.RebalanceSticky, kafkalog.RebalanceCooperativeSticky} {
		t.Run(string(rebalance), func(t *testing.T) {
			t.Parallel()
			testHandoff(t, rebalance)
		})
	}
}

func testHandoff(t *testing.T, rebalance kafkalog.Rebalance) {
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "sharded")
	group := kafkatest.UniqueName(t, "group")
	c.CreateTopic(t, topic, 4, nil)
	ends := map[int32]int64{0: 3, 1: 3, 2: 3, 3: 0} // partition 3 stays empty
	for p, n := range ends {
		if n > 0 {
			c.Produce(t, topic, p, int(n))
		}
	}

	own := &ownership{t: t, owner: map[int32]string{}}
	readerA, logsA := newShardedReader(t, c, group, rebalance, nil)
	readerB, logsB := newShardedReader(t, c, group, rebalance, nil)
	a := collect(t, topic, subscribe(t, readerA, topic), own.react("a"))
	settled := func(n int) func([]event) bool { return settledOn(t, n) }
	// A holds all four before B joins, so that B's join takes two from A.
	a.waitFor("A to own all four partitions first", settled(4))
	b, stopB := joinSecond(t, readerB, topic, a, own)
	defer stopB()
	fromB, keptByA := own.owned("b"), own.owned("a")

	// B leaves: it revokes its claims, and A replays them from the oldest offset.
	stopB()
	eventsB := b.waitClosed()
	if got := own.owned("b"); len(got) != 0 {
		t.Errorf("b left without revoking partitions %v", got)
	}
	eventsA := a.waitFor("A to own all four partitions, caught up", settled(4))

	for member, events := range map[string][]event{"a": eventsA, "b": eventsB} {
		for _, cl := range claims(t, events) {
			t.Logf("%s: %v", member, cl.events)
			checkClaim(t, cl, ends[cl.partition])
		}
	}
	if rebalance == kafkalog.RebalanceCooperativeSticky {
		// Only partitions that moved were revoked: the ones A kept through
		// B joining and leaving stayed in their first claim.
		if n := count(eventsA, func(e event) bool { return e.control == envelope.Revoked && slices.Contains(keptByA, e.partition) }); n != 0 {
			t.Errorf("cooperative rebalance revoked partitions A kept: %v", eventsA)
		}
	}
	for _, p := range fromB {
		cur := current(t, eventsA)[p]
		if got := offsetsOf(cur.events, p); !slices.Equal(got, upTo(ends[p])) {
			t.Errorf("partition %d taken over from b: A replayed %v, want %v", p, got, upTo(ends[p]))
		}
	}

	if err := readerA.Close(); err != nil {
		t.Fatal(err)
	}
	a.waitClosed()
	if got := own.owned("a"); len(got) != 0 {
		t.Errorf("a closed without revoking partitions %v", got)
	}
	if got := c.CommittedOffsets(t, group); len(got) != 0 {
		t.Errorf("the readers committed offsets: %v", got)
	}
	// Members joining and leaving are normal rebalances: nothing to warn of.
	for member, logs := range map[string]*logBuffer{"a": logsA, "b": logsB} {
		if lines := logs.lines("level=WARN"); len(lines) > 0 {
			t.Errorf("%s warned during normal rebalances: %q", member, lines)
		}
	}
}

// A position committed for the group by someone else does not shorten the
// replay, and the reader does not move it.
func TestShardedReaderIgnoresCommittedOffsetsAndFilters(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "committed")
	group := kafkatest.UniqueName(t, "group")
	c.CreateTopic(t, topic, 1, nil)
	c.Produce(t, topic, 0, 4)
	produce(t, c, topic, 0, "own-commit", "dropped", nil) // offset 4: the last record, filtered out
	tp := messages.TopicPartition{Topic: topic, Partition: 0}
	c.CommitOffsets(t, group, map[messages.TopicPartition]int64{tp: 2})

	keep := func(m *sarama.ConsumerMessage) bool { return string(m.Key) != "own-commit" }
	reader, logs := newShardedReader(t, c, group, kafkalog.RebalanceSticky, keep)
	col := collect(t, topic, subscribe(t, reader, topic), nil)
	events := col.waitFor("CaughtUp", func(es []event) bool { return count(es, isControl(envelope.CaughtUp, 0)) > 0 })

	want := []string{"assigned(0)", "0@0", "0@1", "0@2", "0@3", "caught-up(0)"}
	var got []string
	for _, e := range events {
		got = append(got, e.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("messages %v, want %v", got, want)
	}
	if len(logs.lines("committed offset", "committed=2")) != 1 {
		t.Error("no warning about the group's committed offset")
	}

	produce(t, c, topic, 0, "k", "tail", nil)
	col.waitFor("the tail", func(es []event) bool { return slices.Contains(offsetsOf(es, 0), 5) })
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	events = col.waitClosed()
	if last := events[len(events)-1]; last.control != envelope.Revoked {
		t.Errorf("last message %v, want Revoked", last)
	}
	if got := c.CommittedOffsets(t, group); got[tp] != 2 || len(got) != 1 {
		t.Errorf("committed offsets %v, want only %v=2, untouched", got, tp)
	}
}

func TestShardedReaderWaitsForMissingTopic(t *testing.T) {
	t.Parallel()
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "later")
	group := kafkatest.UniqueName(t, "group")

	reader, logs := newShardedReader(t, c, group, "", nil)
	col := collect(t, topic, subscribe(t, reader, topic), nil)
	deadline := time.Now().Add(wait)
	for len(logs.lines(`msg="waiting for topic"`, "topic="+topic, "cluster="+c.Alias)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal(`no "waiting for topic" log line`)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.CreateTopic(t, topic, 1, nil)
	c.Produce(t, topic, 0, 2)
	// The claim may begin before or after the records land: either way
	// Assigned comes first, then both records and one CaughtUp.
	events := col.waitFor("the records and CaughtUp", func(es []event) bool {
		return len(offsetsOf(es, 0)) == 2 && count(es, isControl(envelope.CaughtUp, 0)) == 1
	})
	if events[0].control != envelope.Assigned {
		t.Errorf("first message %v, want Assigned", events[0])
	}
	if len(logs.lines(`msg="topic found"`)) != 1 {
		t.Error(`no "topic found" log line`)
	}
}

func TestShardedReaderConfig(t *testing.T) {
	base := kafkalog.ReaderConfig{Brokers: []string{"127.0.0.1:9"}}
	old := sarama.NewConfig()
	old.Version = sarama.V0_10_2_0
	for _, tt := range []struct {
		name string
		cfg  kafkalog.ShardedReaderConfig
		ok   bool
	}{
		{"defaults", kafkalog.ShardedReaderConfig{ReaderConfig: base, GroupID: "g"}, true},
		{"cooperative", kafkalog.ShardedReaderConfig{ReaderConfig: base, GroupID: "g", Rebalance: kafkalog.RebalanceCooperativeSticky}, true},
		{"no group", kafkalog.ShardedReaderConfig{ReaderConfig: base}, false},
		{"no brokers", kafkalog.ShardedReaderConfig{GroupID: "g"}, false},
		{"unknown strategy", kafkalog.ShardedReaderConfig{ReaderConfig: base, GroupID: "g", Rebalance: "roundrobin-ish"}, false},
		{"version too old", kafkalog.ShardedReaderConfig{ReaderConfig: kafkalog.ReaderConfig{Brokers: base.Brokers, Sarama: old}, GroupID: "g"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kafkalog.NewShardedReader(tt.cfg)
			if (err == nil) != tt.ok {
				t.Errorf("NewShardedReader: error %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

var (
	_ message.Subscriber = (*kafkalog.ShardedReader)(nil)
	_ message.Subscriber = (*kafkalog.LogReader)(nil)
)

// Verify is the fence of the commit stage: it confirms a member's
// partitions at the group coordinator, refuses partitions that moved to
// another member, and refuses a former member (a paused instance whose
// session ended while it was away) asking with its old member id.
func TestShardedReaderVerifyFencesFormerOwners(t *testing.T) {
	c := kafkatest.Shared(t).Source
	topic := kafkatest.UniqueName(t, "fenced")
	group := kafkatest.UniqueName(t, "group")
	c.CreateTopic(t, topic, 4, nil)
	own := &ownership{t: t, owner: map[int32]string{}}
	readerA, _ := newShardedReader(t, c, group, kafkalog.RebalanceCooperativeSticky, nil)
	readerB, _ := newShardedReader(t, c, group, kafkalog.RebalanceCooperativeSticky, nil)
	a := collect(t, topic, subscribe(t, readerA, topic), own.react("a"))
	settled := func(n int) func([]event) bool { return settledOn(t, n) }
	a.waitFor("A to own all four partitions", settled(4))
	ctx := context.Background()
	verify := func(r *kafkalog.ShardedReader, parts []int32) error {
		// The coordinator may still show the last generation for a moment
		// after a rebalance: ask until the answer is stable for the test.
		var err error
		for range 20 {
			if err = r.Verify(ctx, parts); err == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return err
	}
	if err := verify(readerA, []int32{0, 1, 2, 3}); err != nil {
		t.Fatalf("A owns all four partitions, Verify says %v", err)
	}

	b, stopB := joinSecond(t, readerB, topic, a, own)
	defer stopB()
	fromB, keptByA := own.owned("b"), own.owned("a")
	if err := verify(readerB, fromB); err != nil {
		t.Errorf("B owns %v, Verify says %v", fromB, err)
	}
	if err := verify(readerA, keptByA); err != nil {
		t.Errorf("A kept %v, Verify says %v", keptByA, err)
	}
	if err := readerA.Verify(ctx, fromB); !errors.Is(err, kafkalog.ErrNotOwner) {
		t.Errorf("A asked for %v, which moved to B: %v, want ErrNotOwner", fromB, err)
	}

	// B leaves; kept as a zombie, it asks with its old member id.
	zombieClient, err := sarama.NewClient([]string{c.Bootstrap}, c.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer zombieClient.Close()
	zombie := kafkalog.KeepMember(readerB, zombieClient)
	stopB()
	b.waitClosed()
	a.waitFor("A to own all four partitions again", settled(4))
	if err := readerB.Verify(ctx, fromB); !errors.Is(err, kafkalog.ErrNotOwner) {
		t.Errorf("B after leaving: %v, want ErrNotOwner", err)
	}
	zombie()
	err = readerB.Verify(ctx, fromB)
	if !errors.Is(err, kafkalog.ErrNotOwner) || !strings.Contains(err.Error(), "is not in the group") {
		t.Errorf("B as a zombie with its old member id: %v, want ErrNotOwner naming the member", err)
	}
	t.Logf("zombie: %v", err)
}
