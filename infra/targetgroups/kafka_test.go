package targetgroups_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/checkpointd/checkpointd/infra/targetgroups"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }

// target is one test's view of the shared target cluster.
type target struct {
	cluster *kafkatest.Cluster
	client  *targetgroups.Client
	topic   string // a fresh topic with two partitions
}

func newTarget(t *testing.T) target {
	t.Helper()
	bed := kafkatest.Shared(t)
	c, err := targetgroups.New(bed.Target.Client(t), slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	topic := kafkatest.UniqueName(t, "orders")
	bed.Target.CreateTopic(t, topic, 2, nil)
	return target{cluster: bed.Target, client: c, topic: topic}
}

func (tg target) tp(p int32) messages.TopicPartition {
	return messages.TopicPartition{Topic: tg.topic, Partition: p}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// offsetsOf reads one group's offsets.
func offsetsOf(t *testing.T, c *targetgroups.Client, group string) (map[messages.TopicPartition]int64, error) {
	t.Helper()
	out, failed := c.Offsets(testContext(t), []string{group})
	if err := failed[group]; err != nil {
		return nil, err
	}
	got, ok := out[group]
	if !ok {
		t.Fatalf("Offsets left out group %s", group)
	}
	return got, nil
}

func describeOne(t *testing.T, c *targetgroups.Client, group string) targetgroups.GroupState {
	t.Helper()
	states, err := c.Describe(testContext(t), []string{group})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := states[group]
	if !ok {
		t.Fatalf("Describe left out group %s", group)
	}
	if s.Err != nil {
		t.Fatalf("describe %s: %v", group, s.Err)
	}
	return s
}

func reasons(res targetgroups.CommitResult) map[messages.TopicPartition]targetgroup.Reason {
	out := make(map[messages.TopicPartition]targetgroup.Reason, len(res.Partitions))
	for tp, p := range res.Partitions {
		out[tp] = p.Reason
	}
	return out
}

func TestCommitIntoNewGroupCreatesSimpleGroup(t *testing.T) {
	tg := newTarget(t)
	group := kafkatest.UniqueName(t, "g")

	if s := describeOne(t, tg.client, group); s.State != targetgroup.StateNotFound || s.Active {
		t.Fatalf("before any commit: %+v, want NotFound and not active", s)
	}
	offsets := map[messages.TopicPartition]targetgroups.Offset{
		tg.tp(0): {Offset: 10, Metadata: "from-source"},
		tg.tp(1): {Offset: 0},
	}
	res, err := tg.client.Commit(testContext(t), group, offsets)
	if err != nil {
		t.Fatal(err)
	}
	for tp, p := range res.Partitions {
		if p.Reason != targetgroup.Committed || p.Err != nil {
			t.Errorf("%s: %s %v, want committed", tp, p.Reason, p.Err)
		}
	}

	s := describeOne(t, tg.client, group)
	if s.State != targetgroup.StateEmpty || s.Protocol != targetgroups.ProtocolClassic || s.Members != 0 || s.Active {
		t.Errorf("after commit: %+v, want an Empty classic group without members", s)
	}
	got, err := offsetsOf(t, tg.client, group)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[tg.tp(0)] != 10 || got[tg.tp(1)] != 0 {
		t.Errorf("Offsets = %v, want %s=10 %s=0", got, tg.tp(0), tg.tp(1))
	}

	// What a consumer will see: the metadata copied and no leader epoch.
	resp, err := tg.cluster.Admin(t).ListConsumerGroupOffsets(group, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]string{0: "from-source", 1: ""} {
		b := resp.GetBlock(tg.topic, p)
		if b == nil {
			t.Fatalf("no committed offset for partition %d", p)
		}
		if b.LeaderEpoch != -1 {
			t.Errorf("partition %d: committed leader epoch %d, want -1", p, b.LeaderEpoch)
		}
		if b.Metadata != want {
			t.Errorf("partition %d: metadata %q, want %q", p, b.Metadata, want)
		}
	}
}

func TestCommitIntoEmptyGroup(t *testing.T) {
	tg := newTarget(t)
	group := kafkatest.UniqueName(t, "g")
	tg.cluster.CommitOffsets(t, group, map[messages.TopicPartition]int64{tg.tp(0): 5, tg.tp(1): 50})

	if s := describeOne(t, tg.client, group); s.State != targetgroup.StateEmpty || s.Active {
		t.Fatalf("%+v, want Empty", s)
	}
	res, err := tg.client.Commit(testContext(t), group, map[messages.TopicPartition]targetgroups.Offset{tg.tp(0): {Offset: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Partitions[tg.tp(0)]; r.Reason != targetgroup.Committed {
		t.Fatalf("commit into empty group: %s %v", r.Reason, r.Err)
	}
	got := tg.cluster.CommittedOffsets(t, group)
	if got[tg.tp(0)] != 7 || got[tg.tp(1)] != 50 {
		t.Errorf("offsets %v, want partition 0 at 7 and partition 1 untouched at 50", got)
	}
}

func TestCommitSkipsMissingTopicPartitionsOnly(t *testing.T) {
	tg := newTarget(t)
	group := kafkatest.UniqueName(t, "g")
	missingTopic := messages.TopicPartition{Topic: kafkatest.UniqueName(t, "gone"), Partition: 0}
	missingPartition := tg.tp(7)

	exist, failed := tg.client.ExistingPartitions(testContext(t), []string{tg.topic, missingTopic.Topic})
	if len(failed) != 0 {
		t.Fatal(failed)
	}
	if !exist[tg.tp(0)] || !exist[tg.tp(1)] || exist[missingPartition] || exist[missingTopic] || len(exist) != 2 {
		t.Errorf("ExistingPartitions = %v, want exactly %s and %s", exist, tg.tp(0), tg.tp(1))
	}

	res, err := tg.client.Commit(testContext(t), group, map[messages.TopicPartition]targetgroups.Offset{
		tg.tp(0): {Offset: 3}, missingTopic: {Offset: 3}, missingPartition: {Offset: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[messages.TopicPartition]targetgroup.Reason{
		tg.tp(0): targetgroup.Committed, missingTopic: targetgroup.TargetTopicMissing, missingPartition: targetgroup.TargetTopicMissing,
	}
	if got := reasons(res); !equalReasons(got, want) {
		t.Errorf("reasons %v, want %v", got, want)
	}
	if got := tg.cluster.CommittedOffsets(t, group); len(got) != 1 || got[tg.tp(0)] != 3 {
		t.Errorf("offsets %v, want only %s at 3", got, tg.tp(0))
	}
	// Looking a topic up must not create it.
	// (A fresh client: the first one still has the topic cached as missing.)
	fresh, err := targetgroups.New(tg.cluster.Client(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	exist, failed = fresh.ExistingPartitions(testContext(t), []string{missingTopic.Topic})
	if len(failed) != 0 || len(exist) != 0 {
		t.Errorf("missing topic after the commit: %v, %v", exist, failed)
	}
}

func TestCommitMetadataTooLarge(t *testing.T) {
	tg := newTarget(t)
	group := kafkatest.UniqueName(t, "g")
	res, err := tg.client.Commit(testContext(t), group, map[messages.TopicPartition]targetgroups.Offset{
		tg.tp(0): {Offset: 1, Metadata: strings.Repeat("x", 4097)}, // offset.metadata.max.bytes is 4096
		tg.tp(1): {Offset: 1, Metadata: "fine"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Partitions[tg.tp(0)]; r.Reason != targetgroup.MetadataTooLarge || !errors.Is(r.Err, sarama.ErrOffsetMetadataTooLarge) {
		t.Errorf("oversized metadata: %s %v", r.Reason, r.Err)
	}
	if r := res.Partitions[tg.tp(1)]; r.Reason != targetgroup.Committed {
		t.Errorf("fine metadata: %s %v", r.Reason, r.Err)
	}
}

func TestActiveClassicGroupIsNotWritten(t *testing.T) {
	tg := newTarget(t)
	group := kafkatest.UniqueName(t, "g")
	tg.cluster.CommitOffsets(t, group, map[messages.TopicPartition]int64{tg.tp(0): 5, tg.tp(1): 5})
	joinClassic(t, tg.cluster.Bootstrap, tg.cluster.SaramaConfig(), group, tg.topic)

	s := describeOne(t, tg.client, group)
	if s.State != "Stable" || s.Protocol != targetgroups.ProtocolClassic || s.Members != 1 || !s.Active {
		t.Errorf("joined classic group: %+v, want Stable, classic, one member, active", s)
	}
	res, err := tg.client.Commit(testContext(t), group, map[messages.TopicPartition]targetgroups.Offset{tg.tp(0): {Offset: 1}, tg.tp(1): {Offset: 9}})
	if err != nil {
		t.Fatal(err)
	}
	for tp, p := range res.Partitions {
		if p.Reason != targetgroup.ActiveOnTarget || !errors.Is(p.Err, sarama.ErrUnknownMemberId) {
			t.Errorf("%s: %s %v, want active_on_target from UNKNOWN_MEMBER_ID", tp, p.Reason, p.Err)
		}
	}
	if got := tg.cluster.CommittedOffsets(t, group); got[tg.tp(0)] != 5 || got[tg.tp(1)] != 5 {
		t.Errorf("offsets of the active group changed: %v", got)
	}
}

func TestActiveConsumerProtocolGroupIsNotWritten(t *testing.T) {
	tg := newTarget(t)
	group := kafkatest.UniqueName(t, "g")
	tg.cluster.CommitOffsets(t, group, map[messages.TopicPartition]int64{tg.tp(0): 5, tg.tp(1): 5})
	joinConsumerProtocol(t, tg.cluster.Bootstrap, group, tg.topic)

	var s targetgroups.GroupState
	waitUntil(t, 30*time.Second, "KIP-848 group to be Stable", func() bool {
		s = describeOne(t, tg.client, group)
		return s.State == "Stable"
	})
	if s.Protocol != targetgroups.ProtocolConsumer || s.Members != 1 || !s.Active {
		t.Errorf("joined KIP-848 group: %+v, want consumer protocol, one member, active", s)
	}
	// The pitfall Describe avoids: DescribeGroups alone calls this group Dead.
	if ds, err := tg.cluster.Admin(t).DescribeConsumerGroups([]string{group}); err != nil || len(ds) != 1 {
		t.Fatalf("DescribeConsumerGroups: %v %v", ds, err)
	} else if ds[0].State != "Dead" {
		t.Logf("note: DescribeGroups now reports %q for a KIP-848 group", ds[0].State)
	}

	res, err := tg.client.Commit(testContext(t), group, map[messages.TopicPartition]targetgroups.Offset{tg.tp(0): {Offset: 1}, tg.tp(1): {Offset: 9}})
	if err != nil {
		t.Fatal(err)
	}
	for tp, p := range res.Partitions {
		// Kafka looks the empty member id up before any version check.
		if p.Reason != targetgroup.ActiveOnTarget || !errors.Is(p.Err, sarama.ErrUnknownMemberId) {
			t.Errorf("%s: %s %v, want active_on_target from UNKNOWN_MEMBER_ID", tp, p.Reason, p.Err)
		}
	}
	if got := tg.cluster.CommittedOffsets(t, group); got[tg.tp(0)] != 5 || got[tg.tp(1)] != 5 {
		t.Errorf("offsets of the active group changed: %v", got)
	}
}

func TestDescribeManyGroupsAtOnce(t *testing.T) {
	tg := newTarget(t)
	fresh := kafkatest.UniqueName(t, "fresh")
	idle := kafkatest.UniqueName(t, "idle")
	busy := kafkatest.UniqueName(t, "busy")
	tg.cluster.CommitOffsets(t, idle, map[messages.TopicPartition]int64{tg.tp(0): 1})
	joinClassic(t, tg.cluster.Bootstrap, tg.cluster.SaramaConfig(), busy, tg.topic)

	states, err := tg.client.Describe(testContext(t), []string{fresh, idle, busy, idle})
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 3 {
		t.Fatalf("got %d states, want 3: %v", len(states), states)
	}
	for group, want := range map[string]string{fresh: targetgroup.StateNotFound, idle: targetgroup.StateEmpty, busy: "Stable"} {
		if s := states[group]; s.Err != nil || s.State != want {
			t.Errorf("%s: %+v, want %s", group, s, want)
		}
	}
}

// Offsets reads many groups at once: groups with offsets, a group that
// never existed and one with a member but no offsets.
func TestOffsetsOfManyGroupsAtOnce(t *testing.T) {
	tg := newTarget(t)
	idle := kafkatest.UniqueName(t, "idle")
	other := kafkatest.UniqueName(t, "other")
	fresh := kafkatest.UniqueName(t, "fresh")
	noOffsets := kafkatest.UniqueName(t, "nooffsets")
	tg.cluster.CommitOffsets(t, idle, map[messages.TopicPartition]int64{tg.tp(0): 3, tg.tp(1): 4})
	tg.cluster.CommitOffsets(t, other, map[messages.TopicPartition]int64{tg.tp(1): 9})
	joinClassic(t, tg.cluster.Bootstrap, tg.cluster.SaramaConfig(), noOffsets, tg.topic)

	got, failed := tg.client.Offsets(testContext(t), []string{idle, other, fresh, noOffsets, idle})
	if len(failed) != 0 {
		t.Fatalf("failed: %v", failed)
	}
	want := map[string]map[messages.TopicPartition]int64{
		idle: {tg.tp(0): 3, tg.tp(1): 4}, other: {tg.tp(1): 9}, fresh: {}, noOffsets: {},
	}
	if len(got) != len(want) {
		t.Errorf("offsets of %d groups, want %d: %v", len(got), len(want), got)
	}
	for g, w := range want {
		if offs, ok := got[g]; !ok || !maps.Equal(offs, w) {
			t.Errorf("%s: %v (present %v), want %v", g, offs, ok, w)
		}
	}
}

// A topic seen as missing is looked up again after the short missing-TTL,
// so one MM2 just created shows up soon; an existing topic's partitions are
// trusted for the longer TTL.
func TestTopicCacheSeesNewTopic(t *testing.T) {
	const missingTTL = 2 * time.Second
	bed := kafkatest.Shared(t)
	c, err := targetgroups.New(bed.Target.Client(t), nil, targetgroups.WithTopicCacheTTL(time.Minute, missingTTL))
	if err != nil {
		t.Fatal(err)
	}
	topic := kafkatest.UniqueName(t, "late")
	tp := func(p int32) messages.TopicPartition { return messages.TopicPartition{Topic: topic, Partition: p} }
	lookup := func() map[messages.TopicPartition]bool {
		t.Helper()
		got, failed := c.ExistingPartitions(testContext(t), []string{topic})
		if len(failed) != 0 {
			t.Fatal(failed)
		}
		return got
	}
	seenMissing := time.Now()
	if got := lookup(); len(got) != 0 {
		t.Fatalf("before it is created: %v", got)
	}
	bed.Target.CreateTopic(t, topic, 2, nil)
	if got := lookup(); time.Since(seenMissing) < missingTTL && len(got) != 0 {
		t.Errorf("within the missing-TTL the cache still answers missing, got %v", got)
	}
	waitUntil(t, 15*time.Second, "the created topic to show up", func() bool { return len(lookup()) == 2 })
	if waited := time.Since(seenMissing); waited < missingTTL {
		t.Errorf("the topic showed up after %v, before the missing-TTL %v: not cached", waited, missingTTL)
	}
	if err := bed.Target.Admin(t).CreatePartitions(topic, 3, nil, false); err != nil {
		t.Fatal(err)
	}
	if got := lookup(); len(got) != 2 || !got[tp(0)] || !got[tp(1)] {
		t.Errorf("within the TTL: %v, want the two cached partitions", got)
	}
}

// Concurrent commits into groups on the one broker of the target go over
// several connections at once: a commit opens a connection only when every
// open one is busy, so more than one opened means they overlapped. All of
// them land, no more than the limit is opened, and Close closes them.
func TestConcurrentCommitsToOneCoordinatorOverlap(t *testing.T) {
	const groups, conns = 32, 4
	bed := kafkatest.Shared(t)
	client := bed.Target.Client(t)
	c, err := targetgroups.New(client, slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		targetgroups.WithCommitConnections(conns))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var opened []*sarama.Broker
	targetgroups.OnCommitConnOpen(c, func(b *sarama.Broker) {
		mu.Lock()
		defer mu.Unlock()
		opened = append(opened, b)
	})
	topic := kafkatest.UniqueName(t, "orders")
	bed.Target.CreateTopic(t, topic, 2, nil)
	tp := func(p int32) messages.TopicPartition { return messages.TopicPartition{Topic: topic, Partition: p} }

	names := make([]string, groups)
	for i := range names {
		names[i] = kafkatest.UniqueName(t, fmt.Sprintf("g%02d", i))
	}
	start := make(chan struct{})
	errs := make([]error, groups)
	var wg sync.WaitGroup
	for i, g := range names {
		wg.Go(func() {
			<-start
			res, err := c.Commit(testContext(t), g, map[messages.TopicPartition]targetgroups.Offset{
				tp(0): {Offset: int64(i)}, tp(1): {Offset: int64(100 + i)},
			})
			if err == nil && res.Count(targetgroup.Committed) != 2 {
				err = fmt.Errorf("%+v", res)
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("commit into %s: %v", names[i], err)
		}
	}
	got, failed := c.Offsets(testContext(t), names)
	if len(failed) != 0 {
		t.Fatal(failed)
	}
	for i, g := range names {
		if o := got[g]; len(o) != 2 || o[tp(0)] != int64(i) || o[tp(1)] != int64(100+i) {
			t.Errorf("%s: offsets %v, want %s=%d %s=%d", g, o, tp(0), i, tp(1), 100+i)
		}
	}

	st := c.CommitConnections()
	t.Logf("%d concurrent commits into %d groups on one broker: %+v", groups, groups, st)
	mu.Lock()
	conns0 := slices.Clone(opened)
	mu.Unlock()
	if len(conns0) < 2 || len(conns0) > conns || st.Opened != int64(len(conns0)) || st.Open != len(conns0) {
		t.Errorf("opened %d commit connections (stats %+v), want 2 to %d, all still open", len(conns0), st, conns)
	}
	coord, err := client.Coordinator(names[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range conns0 {
		if ok, _ := b.Connected(); !ok || b.Addr() != coord.Addr() {
			t.Errorf("commit connection to %s: connected %v, want connected to the coordinator %s", b.Addr(), ok, coord.Addr())
		}
	}

	// Sequential commits reuse the open connections.
	for _, g := range names[:8] {
		if _, err := c.Commit(testContext(t), g, map[messages.TopicPartition]targetgroups.Offset{tp(0): {Offset: 1000}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.CommitConnections().Opened; n != st.Opened {
		t.Errorf("sequential commits opened %d more connections, want none", n-st.Opened)
	}

	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, b := range conns0 {
		if ok, _ := b.Connected(); ok {
			t.Errorf("commit connection to %s still open after Close", b.Addr())
		}
	}
	if st := c.CommitConnections(); st.Open != 0 || st.Closed != st.Opened {
		t.Errorf("after Close: %+v, want none open", st)
	}
	// After Close commits go over the client's own connection.
	if res, err := c.Commit(testContext(t), names[0], map[messages.TopicPartition]targetgroups.Offset{tp(0): {Offset: 2000}}); err != nil || res.Count(targetgroup.Committed) != 1 {
		t.Errorf("commit after Close: %+v, %v", res, err)
	}
	if st := c.CommitConnections(); st.Opened != int64(len(conns0)) {
		t.Errorf("a commit after Close opened a connection: %+v", st)
	}
}

// joinClassic keeps a sarama consumer-group member in group until the test
// ends, and returns once the group is Stable.
func joinClassic(t *testing.T, bootstrap string, cfg *sarama.Config, group, topic string) {
	t.Helper()
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup([]string{bootstrap}, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	joined := make(chan struct{})
	h := &memberHandler{joined: joined}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				t.Logf("classic member of %s: %v", group, err)
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = cg.Close()
	})
	select {
	case <-joined:
	case <-time.After(30 * time.Second):
		t.Fatalf("classic member never joined group %s", group)
	}
}

type memberHandler struct {
	once   sync.Once
	joined chan struct{}
}

func (h *memberHandler) Setup(sarama.ConsumerGroupSession) error {
	h.once.Do(func() { close(h.joined) })
	return nil
}
func (h *memberHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *memberHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}

// joinConsumerProtocol keeps a franz-go member in group with the KIP-848
// protocol until the test ends; sarama cannot speak it.
func joinConsumerProtocol(t *testing.T, bootstrap, group, topic string) {
	t.Helper()
	assigned := make(chan struct{})
	var once sync.Once
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.RangeBalancer()), // the server-side "range" assignor
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			once.Do(func() { close(assigned) })
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		cl.Close()
	})
	select {
	case <-assigned:
	case <-time.After(30 * time.Second):
		t.Fatalf("KIP-848 member never got an assignment in group %s", group)
	}
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func equalReasons(a, b map[messages.TopicPartition]targetgroup.Reason) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// testWriter sends the client's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
