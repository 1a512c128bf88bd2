//go:build linux

package scale

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// ---- the source side: records, offset syncs, commits ---------------------------

// producer writes one record to every partition of topic each interval, so
// MM2's MirrorSourceConnector (offset.lag.max=0) keeps writing fresh offset
// syncs and the groups always have a new translatable offset to commit. The
// interval is long against the systems' delays: MM2's store (and
// checkpointd's copy of it) thins out older syncs, so a commit's sync must
// still be the newest or the one before when the system translates it, or
// its translation falls back to an older sync.
type producer struct {
	stop   func()
	paused atomic.Bool
	sent   atomic.Int64
	errs   atomic.Int64
}

// pause stops the rounds until resume, and waits out one in flight.
func (pr *producer) pause()  { pr.paused.Store(true); time.Sleep(time.Second) }
func (pr *producer) resume() { pr.paused.Store(false) }

func startProducer(t *testing.T, c *kafkatest.Cluster, topic string, partitions int, every time.Duration) *producer {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{c.Bootstrap}, c.SaramaConfig())
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	pr := &producer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for n := 0; ; n++ {
			if pr.paused.Load() {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				continue
			}
			msgs := make([]*sarama.ProducerMessage, partitions)
			for i := range msgs {
				msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: int32(i),
					Value: sarama.StringEncoder("r" + strconv.Itoa(n))}
			}
			if err := p.SendMessages(msgs); err != nil {
				pr.errs.Add(1)
			} else {
				pr.sent.Add(int64(partitions))
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	pr.stop = sync.OnceFunc(func() { cancel(); <-done; _ = p.Close() })
	t.Cleanup(pr.stop)
	return pr
}

// syncWatch tails the offset-sync topic and keeps the newest sync of each
// partition of one topic. A commit at newest.upstream+1 translates, by MM2's
// rules, to newest.downstream+1 once the system under test has read that sync:
// the newest sync is always in MM2's store.
type syncWatch struct {
	mu     sync.Mutex
	latest []messages.OffsetSync // by partition; Topic == "" until the first
	count  int64
	stop   func()
}

func startSyncWatch(t *testing.T, bed *kafkatest.Bed, topic string, partitions int) *syncWatch {
	t.Helper()
	w := &syncWatch{latest: make([]messages.OffsetSync, partitions)}
	client := bed.Source.Client(t)
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	name := bed.OffsetSyncsTopic()
	if err := client.RefreshMetadata(name); err != nil {
		t.Fatalf("metadata of %s: %v", name, err)
	}
	parts, err := client.Partitions(name)
	if err != nil {
		t.Fatalf("partitions of %s: %v", name, err)
	}
	var wg sync.WaitGroup
	var pcs []sarama.PartitionConsumer
	for _, p := range parts {
		pc, err := consumer.ConsumePartition(name, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("consume %s-%d: %v", name, p, err)
		}
		pcs = append(pcs, pc)
		wg.Go(func() {
			for m := range pc.Messages() {
				s, err := messages.DecodeOffsetSync(m.Key, m.Value)
				if err != nil || s.Topic != topic || int(s.Partition) >= partitions {
					continue
				}
				w.mu.Lock()
				if s.UpstreamOffset >= w.latest[s.Partition].UpstreamOffset {
					w.latest[s.Partition] = s
				}
				w.count++
				w.mu.Unlock()
			}
		})
		wg.Go(func() {
			for range pc.Errors() {
			}
		})
	}
	w.stop = sync.OnceFunc(func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		wg.Wait()
		_ = consumer.Close()
	})
	t.Cleanup(w.stop)
	return w
}

// next returns, per partition, the offset to commit and its translation;
// ok is false for partitions with no sync yet.
func (w *syncWatch) next(offsets, wants []int64) (ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok = true
	for p, s := range w.latest {
		if s.Topic == "" {
			ok = false
			offsets[p], wants[p] = 0, -1
			continue
		}
		offsets[p], wants[p] = s.UpstreamOffset+1, s.DownstreamOffset+1
	}
	return ok
}

// waitAll waits until every partition has a sync at its last record: end
// offsets of the source topic minus one.
func (w *syncWatch) waitAll(t *testing.T, c *kafkatest.Cluster, topic string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ends := c.EndOffsets(t, topic)
		w.mu.Lock()
		missing := 0
		for p, s := range w.latest {
			if s.Topic == "" || s.UpstreamOffset < ends[int32(p)]-1 {
				missing++
			}
		}
		w.mu.Unlock()
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("offset syncs of %s: %d partitions lack a sync at their end after %s", topic, missing, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// committer makes memberless commits (generation -1, no member id, no
// metadata) on a few long-lived clients, so that requests of different groups
// go out in parallel.
type committer struct {
	cfg     *sarama.Config
	clients []sarama.Client
}

func newCommitter(t *testing.T, c *kafkatest.Cluster, n int) *committer {
	t.Helper()
	cm := &committer{cfg: c.SaramaConfig()}
	for range n {
		cm.clients = append(cm.clients, c.Client(t))
	}
	return cm
}

func (cm *committer) commit(group, topic string, offsets []int64) error {
	h := fnv.New32a()
	_, _ = h.Write([]byte(group))
	client := cm.clients[int(h.Sum32())%len(cm.clients)]
	req := sarama.NewOffsetCommitRequest(cm.cfg, group)
	for p, off := range offsets {
		req.AddBlockWithLeaderEpoch(topic, int32(p), off, -1, 0, "")
	}
	var last error
	for attempt := range 20 {
		if attempt > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		coord, err := client.Coordinator(group)
		if err != nil {
			last = err
			continue
		}
		resp, err := coord.CommitOffset(req)
		if err != nil {
			_ = client.RefreshCoordinator(group)
			last = err
			continue
		}
		last = nil
		for tp, parts := range resp.Errors {
			for p, kerr := range parts {
				if !errors.Is(kerr, sarama.ErrNoError) {
					last = fmt.Errorf("%s-%d: %w", tp, p, kerr)
				}
			}
		}
		if last == nil {
			return nil
		}
		if !errors.Is(last, sarama.ErrOffsetsLoadInProgress) && !errors.Is(last, sarama.ErrConsumerCoordinatorNotAvailable) &&
			!errors.Is(last, sarama.ErrNotCoordinatorForConsumer) {
			return last
		}
		_ = client.RefreshCoordinator(group)
	}
	return last
}

// ---- the target side: which commit reached the target when ---------------------

// pending is one (commit, partition) waiting for the target group's offset to
// reach its translation.
type pending struct {
	want int64
	at   time.Time
}

// tracker matches the target's __consumer_offsets against the commits made.
type tracker struct {
	mu       sync.Mutex
	groups   map[string]int // group -> index
	parts    int
	remote   string
	waiting  [][]pending // by group*parts+partition, in commit order (wants increase)
	reached  []int64     // by pair: the highest target offset seen
	nWaiting int
	delays   []float64 // ms, of measured pairs reached
	doneAt   []time.Time
	reachedG []int32     // the group of each delay
	sentAt   []time.Time // when each delay's source commit was sent
	// target commit records (one per partition) of our groups, and distinct
	// (group, commit timestamp): about the OffsetCommit requests.
	records, requests int64
	lastReq           map[int]int64
	lowered           int
	start             time.Time // initial commits (at zero) are timed from here
}

func (tr *tracker) setStart(at time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.start = at
}

// resetMeasured forgets what the initial sync measured, before the load.
func (tr *tracker) resetMeasured() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.delays, tr.doneAt, tr.reachedG, tr.sentAt = nil, nil, nil, nil
	tr.records, tr.requests = 0, 0
}

// reachedPair is one timed (commit, partition) that reached the target.
type reachedPair struct {
	group         int
	sent, reached time.Time
}

// reachedPairs returns every timed pair reached since the last
// resetMeasured.
func (tr *tracker) reachedPairs() []reachedPair {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := make([]reachedPair, len(tr.delays))
	for i := range out {
		out[i] = reachedPair{group: int(tr.reachedG[i]), sent: tr.sentAt[i], reached: tr.doneAt[i]}
	}
	return out
}

// result returns the delays (ms) and when each was reached.
func (tr *tracker) result() ([]float64, []time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.delays), slices.Clone(tr.doneAt)
}

func newTracker(groups []string, parts int, remote string) *tracker {
	tr := &tracker{groups: make(map[string]int, len(groups)), parts: parts, remote: remote,
		waiting: make([][]pending, len(groups)*parts), reached: make([]int64, len(groups)*parts),
		lastReq: make(map[int]int64)}
	for i, g := range groups {
		tr.groups[g] = i
	}
	for i := range tr.reached {
		tr.reached[i] = -1
	}
	return tr
}

// add registers a commit's partitions whose translation is above the last
// registered one (the others cannot be timed: the target is there already).
func (tr *tracker) add(g int, wants []int64, last []int64, at time.Time) (measured int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for p, w := range wants {
		if w < 0 || w <= last[p] {
			continue
		}
		last[p] = w
		i := g*tr.parts + p
		if tr.reached[i] >= w {
			continue
		}
		tr.waiting[i] = append(tr.waiting[i], pending{want: w, at: at})
		tr.nWaiting++
		measured++
	}
	return measured
}

// forget drops the newest pending entries of a commit that failed.
func (tr *tracker) forget(g int, wants []int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for p, w := range wants {
		i := g*tr.parts + p
		if n := len(tr.waiting[i]); n > 0 && tr.waiting[i][n-1].want == w {
			tr.waiting[i] = tr.waiting[i][:n-1]
			tr.nWaiting--
		}
	}
}

func (tr *tracker) target(group string, partition int32, offset int64, at time.Time) {
	g, ok := tr.groups[group]
	if !ok || int(partition) >= tr.parts {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.records++
	if tr.lastReq[g] != at.UnixMilli() {
		tr.lastReq[g] = at.UnixMilli()
		tr.requests++
	}
	i := g*tr.parts + int(partition)
	if offset < tr.reached[i] {
		tr.lowered++
	}
	tr.reached[i] = max(tr.reached[i], offset)
	ws := tr.waiting[i]
	k := 0
	for ; k < len(ws) && ws[k].want <= offset; k++ {
		from := ws[k].at
		if from.IsZero() {
			from = tr.start
		}
		tr.delays = append(tr.delays, max(0, float64(at.Sub(from).Microseconds())/1000))
		tr.doneAt = append(tr.doneAt, at)
		tr.reachedG = append(tr.reachedG, int32(g))
		tr.sentAt = append(tr.sentAt, from)
	}
	tr.waiting[i] = ws[k:]
	tr.nWaiting -= k
}

func (tr *tracker) backlog() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.nWaiting
}

func (tr *tracker) counts() (records, requests int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.records, tr.requests
}

// watchTarget tails the target's __consumer_offsets from its end and feeds the
// tracker with each commit record of our groups, timed by the record's commit
// timestamp (the broker's clock; same machine, milliseconds). It keeps going
// across a broker restart: sarama's partition consumers retry.
func watchTarget(t *testing.T, c *kafkatest.Cluster, tr *tracker) (stop func()) {
	t.Helper()
	const topic = "__consumer_offsets"
	cfg := c.SaramaConfig()
	cfg.Consumer.Retry.Backoff = 500 * time.Millisecond
	cfg.Metadata.Retry.Max = 1000
	client, err := sarama.NewClient([]string{c.Bootstrap}, cfg)
	if err != nil {
		t.Fatalf("client of the target: %v", err)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("consumer of the target: %v", err)
	}
	if err := client.RefreshMetadata(topic); err != nil {
		t.Fatalf("metadata of %s on the target: %v", topic, err)
	}
	parts, err := client.Partitions(topic)
	if err != nil || len(parts) == 0 {
		t.Fatalf("partitions of %s on the target: %v", topic, err)
	}
	var pcs []sarama.PartitionConsumer
	var wg sync.WaitGroup
	for _, p := range parts {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("consume %s-%d: %v", topic, p, err)
		}
		pcs = append(pcs, pc)
		wg.Go(func() {
			for m := range pc.Messages() {
				r, err := messages.DecodeOffsetsRecord(m.Key, m.Value)
				if err != nil || r.Kind != messages.OffsetCommitRecord || r.Tombstone || r.Topic != tr.remote {
					continue
				}
				tr.target(r.Group, r.Partition, r.Offset, time.UnixMilli(r.CommitTimestamp))
			}
		})
		wg.Go(func() {
			for range pc.Errors() {
			}
		})
	}
	stop = sync.OnceFunc(func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		wg.Wait()
		_ = consumer.Close()
		_ = client.Close()
	})
	t.Cleanup(stop)
	return stop
}

// groupNames are n group ids under prefix; prefix+"-.*" matches exactly them.
func groupNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-g%05d", prefix, i)
	}
	return out
}

func regexFor(prefix string) string { return strings.ReplaceAll(prefix, ".", `\.`) + "-.*" }
