package targetgroups_test

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/checkpointd/checkpointd/infra/targetgroups"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// These run on kfake, in -short runs too. kfake differs from Kafka where
// the adapter must cope: OffsetFetch of an unknown group answers
// GROUP_ID_NOT_FOUND, and a simple commit to an active KIP-848 group
// answers UNSUPPORTED_VERSION instead of UNKNOWN_MEMBER_ID.

const fakeTopic = "src.orders"

func fakeTarget(t *testing.T, opts ...kfake.Opt) (bootstrap string, cfg func() *sarama.Config, c *targetgroups.Client) {
	t.Helper()
	_, bootstrap, cfg, c = fakeCluster(t, opts...)
	return bootstrap, cfg, c
}

func fakeCluster(t *testing.T, opts ...kfake.Opt) (cluster *kfake.Cluster, bootstrap string, cfg func() *sarama.Config, c *targetgroups.Client) {
	t.Helper()
	cluster, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(2, fakeTopic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	bootstrap = cluster.ListenAddrs()[0]
	cfg = func() *sarama.Config {
		conf := sarama.NewConfig()
		conf.Version = sarama.V4_0_0_0
		conf.Admin.Retry.Backoff = 10 * time.Millisecond
		return conf
	}
	client, err := sarama.NewClient([]string{bootstrap}, cfg())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	c, err = targetgroups.New(client, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return cluster, bootstrap, cfg, c
}

func fakeTP(p int32) messages.TopicPartition {
	return messages.TopicPartition{Topic: fakeTopic, Partition: p}
}

func TestFakeNewGroup(t *testing.T) {
	_, _, c := fakeTarget(t)
	got, err := offsetsOf(t, c, "new")
	if err != nil || len(got) != 0 {
		t.Fatalf("offsets of an unknown group: %v, %v; want none", got, err)
	}
	if s := describeOne(t, c, "new"); s.State != targetgroup.StateNotFound || s.Active {
		t.Fatalf("unknown group: %+v", s)
	}
	res, err := c.Commit(testContext(t), "new", map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: 4, Metadata: "m"}})
	if err != nil || res.Count(targetgroup.Committed) != 1 {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	if got, err := offsetsOf(t, c, "new"); err != nil || got[fakeTP(0)] != 4 {
		t.Fatalf("offsets after commit: %v, %v", got, err)
	}
	if s := describeOne(t, c, "new"); s.State != targetgroup.StateEmpty || s.Active {
		t.Fatalf("after commit: %+v, want Empty", s)
	}
}

func TestFakeActiveClassicGroup(t *testing.T) {
	bootstrap, cfg, c := fakeTarget(t)
	joinClassic(t, bootstrap, cfg(), "busy", fakeTopic)
	if s := describeOne(t, c, "busy"); s.State != "Stable" || s.Protocol != targetgroups.ProtocolClassic || !s.Active {
		t.Fatalf("joined classic group: %+v", s)
	}
	res, err := c.Commit(testContext(t), "busy", map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Partitions[fakeTP(0)]; p.Reason != targetgroup.ActiveOnTarget || !errors.Is(p.Err, sarama.ErrUnknownMemberId) {
		t.Fatalf("commit into active classic group: %s %v", p.Reason, p.Err)
	}
}

func TestFakeActiveConsumerProtocolGroup(t *testing.T) {
	bootstrap, _, c := fakeTarget(t)
	joinConsumerProtocol(t, bootstrap, "busy848", fakeTopic)
	var s targetgroups.GroupState
	waitUntil(t, 10*time.Second, "KIP-848 group to be Stable", func() bool {
		s = describeOne(t, c, "busy848")
		return s.State == "Stable"
	})
	if s.Protocol != targetgroups.ProtocolConsumer || s.Members != 1 || !s.Active {
		t.Fatalf("joined KIP-848 group: %+v", s)
	}
	res, err := c.Commit(testContext(t), "busy848", map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Partitions[fakeTP(0)]; p.Reason != targetgroup.ActiveOnTarget || !errors.Is(p.Err, sarama.ErrUnsupportedVersion) {
		t.Fatalf("commit into active KIP-848 group: %s %v", p.Reason, p.Err)
	}
}

// A broker before 3.7 has no ConsumerGroupDescribe; sarama refuses the
// request itself and Describe falls back to DescribeGroups.
func TestFakeBrokerWithoutKIP848Describe(t *testing.T) {
	bootstrap, cfg, c := fakeTarget(t, kfake.MaxVersions(kversion.V3_6_0()))
	joinClassic(t, bootstrap, cfg(), "busy", fakeTopic)
	states, err := c.Describe(testContext(t), []string{"busy", "new"})
	if err != nil {
		t.Fatal(err)
	}
	if s := states["busy"]; s.Err != nil || s.State != "Stable" || s.Protocol != targetgroups.ProtocolClassic || !s.Active {
		t.Errorf("busy: %+v", s)
	}
	if s := states["new"]; s.Err != nil || s.State != targetgroup.StateNotFound || s.Active {
		t.Errorf("new: %+v", s)
	}
}

// A group whose describe keeps failing is an error, and never looks idle:
// MM2 takes it for a new group and overwrites it (KAFKA-19794).
func TestFakeDescribeFailureIsNeverNotFound(t *testing.T) {
	cluster, _, _, c := fakeCluster(t)
	var calls atomic.Int32
	cluster.ControlKey(int16(kmsg.ConsumerGroupDescribe), func(r kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		calls.Add(1)
		req := r.(*kmsg.ConsumerGroupDescribeRequest)
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, id := range req.Groups {
			g := kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = id, int16(sarama.ErrConsumerCoordinatorNotAvailable)
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil, true
	})
	states, err := c.Describe(testContext(t), []string{"g"})
	if err != nil {
		t.Fatal(err)
	}
	s := states["g"]
	if !errors.Is(s.Err, sarama.ErrConsumerCoordinatorNotAvailable) || !s.Active || s.State == targetgroup.StateNotFound {
		t.Fatalf("failed describe: %+v", s)
	}
	// What the commit stage's decision rests on (groupsync skips a group
	// with DescribeErr as describe_failed).
	if g := s.Target(); g.DescribeErr == nil || g.Writable() {
		t.Errorf("a failed describe must carry its error and not be writable: %+v", g)
	}
	if n := calls.Load(); n != 6 { // sarama's default Admin.Retry.Max is 5
		t.Errorf("ConsumerGroupDescribe sent %d times, want 6", n)
	}
}

// A commit answered NOT_COORDINATOR is sent again to the coordinator looked
// up afresh; the handler below answers once and is then dropped.
func TestFakeCommitRetriesWhenCoordinatorMoved(t *testing.T) {
	cluster, _, _, c := fakeCluster(t)
	cluster.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		return offsetCommitAnswer(r.(*kmsg.OffsetCommitRequest), sarama.ErrNotCoordinatorForConsumer), nil, true
	})
	res, err := c.Commit(testContext(t), "moved", map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: 3}})
	if err != nil || res.Count(targetgroup.Committed) != 1 {
		t.Fatalf("commit after NOT_COORDINATOR: %+v, %v", res, err)
	}
}

// A group the principal may not READ fails as a whole, and the error names
// the missing ACL.
func TestFakeGroupAuthorizationFailure(t *testing.T) {
	cluster, _, _, c := fakeCluster(t)
	cluster.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		return offsetCommitAnswer(r.(*kmsg.OffsetCommitRequest), sarama.ErrGroupAuthorizationFailed), nil, true
	})
	res, err := c.Commit(testContext(t), "locked", map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: 1}, fakeTP(1): {Offset: 1}})
	if !errors.Is(err, sarama.ErrGroupAuthorizationFailed) || !strings.Contains(err.Error(), `READ on group "locked"`) {
		t.Fatalf("error %v, want GROUP_AUTHORIZATION_FAILED naming READ on the group", err)
	}
	if n := res.Count(targetgroup.Unauthorized); n != 2 {
		t.Errorf("%d partitions unauthorized, want 2: %+v", n, res)
	}
}

// offsetCommitAnswer answers every partition of req with kerr.
func offsetCommitAnswer(req *kmsg.OffsetCommitRequest, kerr sarama.KError) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, rt := range req.Topics {
		topic := kmsg.NewOffsetCommitResponseTopic()
		topic.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, int16(kerr)
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	return resp
}

// countOffsetFetches counts the OffsetFetch requests cluster gets.
func countOffsetFetches(cluster *kfake.Cluster) *atomic.Int32 {
	var n atomic.Int32
	cluster.ControlKey(int16(kmsg.OffsetFetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		n.Add(1)
		return nil, nil, false
	})
	return &n
}

// Offsets of several groups take one OffsetFetch per coordinator from Kafka
// 3.0 on, one per group before; the answers are the same.
func TestFakeOffsetsOfManyGroups(t *testing.T) {
	cases := []struct {
		name         string
		opts         []kfake.Opt
		wantRequests int32
	}{
		{name: "batched (v8)", wantRequests: 1},
		{name: "broker before 3.0", opts: []kfake.Opt{kfake.MaxVersions(kversion.V2_8_0())}, wantRequests: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster, _, _, c := fakeCluster(t, tc.opts...)
			for group, offset := range map[string]int64{"a": 4, "b": 7} {
				if res, err := c.Commit(testContext(t), group, map[messages.TopicPartition]targetgroups.Offset{fakeTP(1): {Offset: offset}}); err != nil || res.Count(targetgroup.Committed) != 1 {
					t.Fatalf("commit %s: %+v, %v", group, res, err)
				}
			}
			fetches := countOffsetFetches(cluster)
			got, failed := c.Offsets(testContext(t), []string{"a", "b", "unknown", "a"})
			if len(failed) != 0 {
				t.Fatalf("failed: %v", failed)
			}
			if n := fetches.Load(); n != tc.wantRequests {
				t.Errorf("%d OffsetFetch requests, want %d", n, tc.wantRequests)
			}
			want := map[string]map[messages.TopicPartition]int64{"a": {fakeTP(1): 4}, "b": {fakeTP(1): 7}, "unknown": {}}
			if len(got) != len(want) {
				t.Fatalf("offsets %v, want %v", got, want)
			}
			for g, w := range want {
				if offs, ok := got[g]; !ok || !maps.Equal(offs, w) {
					t.Errorf("%s: %v (present %v), want %v", g, offs, ok, w)
				}
			}
		})
	}
}

// A group the principal may not DESCRIBE fails alone, and the error names
// the missing ACL.
func TestFakeOffsetsGroupAuthorizationFailure(t *testing.T) {
	cluster, _, _, c := fakeCluster(t)
	cluster.ControlKey(int16(kmsg.OffsetFetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.OffsetFetchRequest)
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		for _, rg := range req.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			if rg.Group == "locked" {
				g.ErrorCode = int16(sarama.ErrGroupAuthorizationFailed)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil, true
	})
	got, failed := c.Offsets(testContext(t), []string{"open", "locked"})
	if err := failed["locked"]; !errors.Is(err, sarama.ErrGroupAuthorizationFailed) || !strings.Contains(err.Error(), `DESCRIBE on group "locked"`) {
		t.Errorf("locked: %v, want GROUP_AUTHORIZATION_FAILED naming DESCRIBE on the group", err)
	}
	if _, ok := got["locked"]; ok {
		t.Error("a group that failed also has offsets")
	}
	if offs, ok := got["open"]; !ok || len(offs) != 0 || failed["open"] != nil {
		t.Errorf("open: %v %v %v, want no offsets and no error", offs, ok, failed["open"])
	}
}

// Topic lookups are cached; a failed lookup is not, a missing topic is.
func TestFakeTopicLookupsCached(t *testing.T) {
	cluster, _, _, c := fakeCluster(t)
	var asked [][]string // topics of each metadata request naming ours
	var deniedOnce atomic.Bool
	cluster.ControlKey(int16(kmsg.Metadata), func(r kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		req := r.(*kmsg.MetadataRequest)
		var names []string
		for _, rt := range req.Topics {
			if rt.Topic != nil && (*rt.Topic == fakeTopic || *rt.Topic == "denied") {
				names = append(names, *rt.Topic)
			}
		}
		if len(names) == 0 {
			return nil, nil, false // the client's own metadata refreshes
		}
		asked = append(asked, names)
		if !slices.Contains(names, "denied") || deniedOnce.Swap(true) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		for _, name := range names {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), int16(sarama.ErrTopicAuthorizationFailed)
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	lookup := func(topics ...string) (map[messages.TopicPartition]bool, map[string]error) {
		return c.ExistingPartitions(testContext(t), topics)
	}
	both := map[messages.TopicPartition]bool{fakeTP(0): true, fakeTP(1): true}
	if got, failed := lookup(fakeTopic); !maps.Equal(got, both) || len(failed) != 0 {
		t.Fatalf("first lookup: %v %v", got, failed)
	}
	if got, failed := lookup(fakeTopic); !maps.Equal(got, both) || len(failed) != 0 {
		t.Fatalf("cached lookup: %v %v", got, failed)
	}
	got, failed := lookup(fakeTopic, "denied")
	if !maps.Equal(got, both) || !errors.Is(failed["denied"], sarama.ErrTopicAuthorizationFailed) || len(failed) != 1 {
		t.Fatalf("lookup with a denied topic: %v %v", got, failed)
	}
	for range 2 { // asked once more after the failure, then known missing
		if got, failed := lookup("denied"); len(got) != 0 || len(failed) != 0 {
			t.Fatalf("denied topic, now visible as missing: %v %v", got, failed)
		}
	}
	want := [][]string{{fakeTopic}, {"denied"}, {"denied"}}
	if !slices.EqualFunc(asked, want, slices.Equal) {
		t.Errorf("metadata requests for %v, want %v", asked, want)
	}
}

// fakeClient is a Client of cluster with opts, and the commit connections it
// opens, in order.
func fakeClient(t *testing.T, cluster *kfake.Cluster, opts ...targetgroups.Option) (*targetgroups.Client, func() []*sarama.Broker) {
	t.Helper()
	conf := sarama.NewConfig()
	conf.Version = sarama.V4_0_0_0
	conf.Admin.Retry.Backoff = 10 * time.Millisecond
	client, err := sarama.NewClient(cluster.ListenAddrs(), conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	c, err := targetgroups.New(client, slog.New(slog.NewTextHandler(testWriter{t}, nil)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var mu sync.Mutex
	var opened []*sarama.Broker
	targetgroups.OnCommitConnOpen(c, func(b *sarama.Broker) {
		mu.Lock()
		defer mu.Unlock()
		opened = append(opened, b)
	})
	return c, func() []*sarama.Broker {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(opened)
	}
}

func commitOne(t *testing.T, c *targetgroups.Client, group string, offset int64) {
	t.Helper()
	res, err := c.Commit(testContext(t), group, map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: offset}})
	if err != nil || res.Count(targetgroup.Committed) != 1 {
		t.Fatalf("commit into %s: %+v, %v", group, res, err)
	}
}

// A commit connection whose request failed on the network is closed and
// dropped from the pool, and so are the broker's idle ones; the commit is
// retried on a fresh connection.
func TestFakeCommitConnDroppedAfterNetworkError(t *testing.T) {
	cluster, _, _, _ := fakeCluster(t)
	c, opened := fakeClient(t, cluster)
	commitAtOnce(t, cluster, c, "a", "b") // two connections, both idle after
	if st := c.CommitConnections(); st != (targetgroups.CommitConnStats{Open: 2, Opened: 2}) {
		t.Fatalf("after two concurrent commits: %+v, want two connections open", st)
	}
	before := opened()

	// kfake closes the connection of a request whose control returns an error.
	cluster.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		return nil, errors.New("drop the connection"), true
	})
	commitOne(t, c, "c", 2) // fails on an open connection, lands on a new one
	for _, b := range before {
		if ok, _ := b.Connected(); ok {
			t.Error("a connection opened before the network error is still open")
		}
	}
	if st := c.CommitConnections(); st != (targetgroups.CommitConnStats{Open: 1, Opened: 3, Closed: 2}) {
		t.Errorf("after the network error: %+v, want the old connections closed and one new open", st)
	}
	if got, err := offsetsOf(t, c, "c"); err != nil || got[fakeTP(0)] != 2 {
		t.Errorf("offsets of c: %v, %v", got, err)
	}

	// The new connection is reused.
	commitOne(t, c, "d", 3)
	if conns := opened(); len(conns) != 3 {
		t.Errorf("%d connections opened, want 3", len(conns))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, b := range opened() {
		if ok, _ := b.Connected(); ok {
			t.Errorf("connection to %s open after Close", b.Addr())
		}
	}
}

// A broker that comes back at another address gets new connections; the
// ones to its old address are closed.
func TestFakeCommitConnsFollowBrokerAddress(t *testing.T) {
	cluster, _, _, _ := fakeCluster(t, kfake.NumBrokers(2))
	c, opened := fakeClient(t, cluster)
	group := "moving"
	node := cluster.CoordinatorFor(group)
	commitOne(t, c, group, 1)
	old := opened()
	if len(old) != 1 {
		t.Fatalf("%d connections opened, want 1", len(old))
	}

	if err := cluster.RemoveNode(node); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cluster.AddNode(node, 0); err != nil { // same id, new port
		t.Fatal(err)
	}
	// A group on that broker again, whose coordinator the client looks up.
	var other string
	for i := 0; other == ""; i++ {
		if g := fmt.Sprintf("g%d", i); cluster.CoordinatorFor(g) == node {
			other = g
		}
	}
	commitOne(t, c, other, 2)
	conns := opened()
	if len(conns) != 2 || conns[1].Addr() == old[0].Addr() {
		t.Fatalf("connections opened: %d, want a second one to the new address", len(conns))
	}
	if ok, _ := old[0].Connected(); ok {
		t.Error("the connection to the old address is still open")
	}
	if st := c.CommitConnections(); st != (targetgroups.CommitConnStats{Open: 1, Opened: 2, Closed: 1}) {
		t.Errorf("%+v, want the old connection closed and the new one open", st)
	}
}

// With the pool off, commits go over the client's connection.
func TestFakeCommitConnectionsOff(t *testing.T) {
	cluster, _, _, _ := fakeCluster(t)
	c, opened := fakeClient(t, cluster, targetgroups.WithCommitConnections(0))
	commitOne(t, c, "a", 1)
	if n := len(opened()); n != 0 || c.CommitConnections().Opened != 0 {
		t.Errorf("%d commit connections opened, want none", n)
	}
}

// At most the configured number of connections per broker, however many
// commits run at once.
func TestFakeCommitConnsBounded(t *testing.T) {
	cluster, _, _, _ := fakeCluster(t)
	c, opened := fakeClient(t, cluster, targetgroups.WithCommitConnections(2))
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = fmt.Sprintf("g%d", i)
	}
	commitAtOnce(t, cluster, c, groups...)
	if n := len(opened()); n != 2 {
		t.Errorf("%d connections opened, want 2", n)
	}
}

// commitAtOnce commits into groups concurrently; the broker holds the first
// two commits until both have arrived, so two connections are in use at once.
func commitAtOnce(t *testing.T, cluster *kfake.Cluster, c *targetgroups.Client, groups ...string) {
	t.Helper()
	var arrived atomic.Int32
	cluster.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		if arrived.Add(1) >= 2 {
			cluster.DropControl()
		}
		cluster.SleepControl(func() {
			for arrived.Load() < 2 {
				time.Sleep(time.Millisecond)
			}
		})
		return nil, nil, false
	})
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() {
			res, err := c.Commit(testContext(t), g, map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: int64(i)}})
			if err != nil || res.Count(targetgroup.Committed) != 1 {
				t.Errorf("commit into %s: %+v, %v", g, res, err)
			}
		})
	}
	wg.Wait()
}

// An idle connection unused for the idle timeout is closed, not reused.
func TestFakeIdleCommitConnExpires(t *testing.T) {
	cluster, _, _, _ := fakeCluster(t)
	c, opened := fakeClient(t, cluster)
	targetgroups.SetCommitIdleTimeout(c, 50*time.Millisecond)
	commitOne(t, c, "a", 1)
	commitOne(t, c, "b", 1) // within the timeout: reused
	time.Sleep(100 * time.Millisecond)
	commitOne(t, c, "c", 1)
	conns := opened()
	if len(conns) != 2 {
		t.Fatalf("%d connections opened, want 2", len(conns))
	}
	if ok, _ := conns[0].Connected(); ok {
		t.Error("the expired connection is still open")
	}
	if st := c.CommitConnections(); st != (targetgroups.CommitConnStats{Open: 1, Opened: 2, Closed: 1}) {
		t.Errorf("%+v, want the expired connection closed and a new one open", st)
	}
}

// When no extra connection can be opened (a broker refusing connections),
// commits go over the client's own connection.
func TestFakeCommitFallsBackWhenConnectionsFail(t *testing.T) {
	cluster, _, _, _ := fakeCluster(t)
	c, _ := fakeClient(t, cluster)
	targetgroups.FailCommitDials(c, errors.New("too many connections"))
	var wg sync.WaitGroup
	for i, g := range []string{"a", "b", "c"} {
		wg.Go(func() {
			res, err := c.Commit(testContext(t), g, map[messages.TopicPartition]targetgroups.Offset{fakeTP(0): {Offset: int64(i)}})
			if err != nil || res.Count(targetgroup.Committed) != 1 {
				t.Errorf("commit into %s: %+v, %v", g, res, err)
			}
		})
	}
	wg.Wait()
	if st := c.CommitConnections(); st.Opened != 0 {
		t.Errorf("%+v, want no connection opened", st)
	}
	if got, err := offsetsOf(t, c, "c"); err != nil || got[fakeTP(0)] != 2 {
		t.Errorf("offsets of c: %v, %v", got, err)
	}
}
