package handlers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// Shards is which shards of source groups this instance owns. A group
// belongs to one shard (Of); a shard is owned while the Kafka consumer group
// that shares them among instances has it assigned here: a partition of
// __consumer_offsets in offsets-log mode, a partition of the shard topic in
// admin-poll mode. Each assignment gets a new epoch, so that work begun under an
// earlier one (a restore, a commit round) is recognised and dropped.
//
// The stages that keep per-group state (the Checkpointer, the OffsetSyncer)
// listen and keep only the groups of the shards they own.
type Shards struct {
	of    func(group string) int32
	ofKey func(key []byte) (int32, bool) // optional: of, from a checkpoint record's key

	mu        sync.Mutex
	held      map[int32]uint64
	next      uint64
	listeners []shardListener
}

// shardListener hears of shards changing owner. The calls come in order for
// a shard, outside the Shards' lock.
type shardListener interface {
	assigned(p int32, epoch uint64)
	revoked(p int32)
}

// NewShards makes an empty ownership over the shards of. A nil of puts every
// group in shard 0 (one owner for all).
func NewShards(of func(group string) int32) *Shards {
	if of == nil {
		of = func(string) int32 { return 0 }
	}
	return &Shards{of: of, held: make(map[int32]uint64)}
}

// listen adds l to the listeners; the stages call it when they are made.
func (s *Shards) listen(l shardListener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, l)
}

// WithKeyOf lets the readers of the checkpoints topic find the shard of a
// record from its key, without decoding it (messages.GroupPartitionOfKey),
// and drop other owners' records cheaply: every instance reads them all.
func (s *Shards) WithKeyOf(ofKey func(key []byte) (int32, bool)) *Shards {
	s.ofKey = ofKey
	return s
}

// keyShard returns the shard of a checkpoint record's key, when the key
// tells.
func (s *Shards) keyShard(key []byte) (int32, bool) {
	if s.ofKey == nil {
		return 0, false
	}
	return s.ofKey(key)
}

// MayHoldKey reports false only when the checkpoint record with key belongs
// to a shard owned elsewhere; true when it is this instance's or cannot be
// told from the key alone. The tails of the checkpoints topic drop the
// others' records with it as they read them, before they cost a message.
func (s *Shards) MayHoldKey(key []byte) bool {
	p, ok := s.keyShard(key)
	if !ok {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, held := s.held[p]
	return held
}

// Of returns the shard of group.
func (s *Shards) Of(group string) int32 { return s.of(group) }

// Assign records that shard p is now owned here and tells the listeners.
func (s *Shards) Assign(p int32) uint64 {
	s.mu.Lock()
	s.next++
	epoch := s.next
	s.held[p] = epoch
	ls := s.listeners
	s.mu.Unlock()
	for _, l := range ls {
		l.assigned(p, epoch)
	}
	return epoch
}

// Revoke records that shard p is owned elsewhere now and tells the listeners.
func (s *Shards) Revoke(p int32) {
	s.mu.Lock()
	delete(s.held, p)
	ls := s.listeners
	s.mu.Unlock()
	for _, l := range ls {
		l.revoked(p)
	}
}

// Owner returns the shard of group and the epoch it is owned under; ok is
// false when another instance owns it.
func (s *Shards) Owner(group string) (p int32, epoch uint64, ok bool) {
	p = s.of(group)
	s.mu.Lock()
	defer s.mu.Unlock()
	epoch, ok = s.held[p]
	return p, epoch, ok
}

// Held reports whether shard p is still owned under epoch.
func (s *Shards) Held(p int32, epoch uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.held[p]
	return ok && e == epoch
}

// Owned returns the shards owned now.
func (s *Shards) Owned() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int32, 0, len(s.held))
	for p := range s.held {
		out = append(out, p)
	}
	return out
}

// CheckpointLog reads back the checkpoints topic for a new owner of some
// shards: every record whose key keep accepts (all with a nil keep), from
// the oldest to the end the topic has when the read starts, in order. It is
// I/O, handed in (kafkalog implements it).
type CheckpointLog interface {
	ReadCheckpoints(ctx context.Context, keep func(key []byte) bool, fn func(rec envelope.Record)) error
}

// Fence checks with Kafka, just before target commits, that this instance
// still owns the shards the commits belong to. A paused or partitioned
// instance whose shards moved on learns it here, before writing anything.
type Fence interface {
	Verify(ctx context.Context, shards []int32) error
}

// restoring is the state of a shard between its assignment and the end of
// the read that restores it: the offsets of the records the live tail
// applied meanwhile, which the restore must not overwrite with older ones.
type restoring struct {
	epoch   uint64
	seen    map[groupPartition]int64
	reading bool // a restore read for it is under way
}

// restoreSet is the shards a stage is restoring.
type restoreSet map[int32]*restoring

func (r restoreSet) start(p int32, epoch uint64) {
	r[p] = &restoring{epoch: epoch, seen: make(map[groupPartition]int64)}
}

// take returns the shards waiting that no read covers yet, with the epoch
// of each, and marks them as being read.
func (r restoreSet) take() map[int32]uint64 {
	out := make(map[int32]uint64, len(r))
	for p, st := range r {
		if !st.reading {
			st.reading = true
			out[p] = st.epoch
		}
	}
	return out
}

// release makes the shards of a read that failed wait for the next one.
func (r restoreSet) release(read map[int32]uint64) {
	for p, epoch := range read {
		if st := r[p]; st != nil && st.epoch == epoch {
			st.reading = false
		}
	}
}

// current reports whether shard p still waits under epoch, and whether the
// record at offset for key, found by the restore read, is newer than what
// the live tail applied meanwhile.
func (r restoreSet) current(p int32, epoch uint64, key groupPartition, offset int64) (waits, newer bool) {
	st := r[p]
	if st == nil || st.epoch != epoch {
		return false, false
	}
	seen, ok := st.seen[key]
	return true, !ok || seen < offset
}

// restoreGather is how long a restore waits after a wake-up for more
// shards: one read serves them all. The sharded reader tells of all the
// partitions a rebalance adds at once, when the first of their claims
// starts (sarama starts the others tens of milliseconds apart under load),
// so their shards arrive within a few milliseconds of each other.
const restoreGather = 20 * time.Millisecond

// maxRestoreReads bounds the restore reads under way at once: a rebalance
// that hands shards over in two steps gets a read for each step, the second
// without waiting for the first, and no more reads than that compete for
// the machine.
const maxRestoreReads = 2

// runRestores starts restore each time wake fires (after restoreGather, so
// that one read covers the shards a rebalance assigns together), with up to
// maxRestoreReads under way, and again after retry when one reports
// failure, until ctx ends; it returns when every read has.
func runRestores(ctx context.Context, wake chan struct{}, retry time.Duration, restore func(context.Context) bool) {
	var reads sync.WaitGroup
	defer reads.Wait()
	slots := make(chan struct{}, maxRestoreReads)
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(restoreGather):
		}
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		reads.Go(func() {
			ok := restore(ctx)
			<-slots
			if ok {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		})
	}
}

// saw notes that the tail applied the record at offset for key in shard p.
func (r restoreSet) saw(p int32, key groupPartition, offset int64) {
	if st := r[p]; st != nil && offset > st.seen[key] {
		st.seen[key] = offset
	}
}

// restored is the newest record per pair that a restore read found.
type restored[T any] struct {
	offset int64
	value  T
}

// restoreTarget collects, for one restore read, the newest record of every
// pair of the shards being restored.
type restoreTarget[T any] struct {
	shards map[int32]uint64
	found  map[groupPartition]restored[T]
}

func newRestoreTarget[T any](shards map[int32]uint64) *restoreTarget[T] {
	return &restoreTarget[T]{shards: shards, found: make(map[groupPartition]restored[T])}
}

// keep reports whether group belongs to a shard being restored.
func (t *restoreTarget[T]) keep(shard int32) bool {
	_, ok := t.shards[shard]
	return ok
}

// keepKey reports false for a checkpoint record whose key tells it belongs
// to a shard not being restored: the read steps over it undecoded.
func (t *restoreTarget[T]) keepKey(s *Shards) func(key []byte) bool {
	return func(key []byte) bool {
		p, ok := s.keyShard(key)
		return !ok || t.keep(p)
	}
}

func (t *restoreTarget[T]) add(key groupPartition, offset int64, v T) {
	if cur, ok := t.found[key]; !ok || offset >= cur.offset {
		t.found[key] = restored[T]{offset: offset, value: v}
	}
}

// decodeCheckpointRecord decodes a checkpoints-topic record, or reports
// false for one that does not decode (the tail counts those).
func decodeCheckpointRecord(rec envelope.Record) (messages.Checkpoint, bool) {
	if rec.Tombstone() {
		return messages.Checkpoint{}, false
	}
	cp, err := messages.DecodeCheckpoint(rec.Key, rec.Value)
	return cp, err == nil
}

// ErrConfirmationLate is what OwnershipCheck.Verify says when the fence's
// answer came back too late to be a lease for the write about to be made.
var ErrConfirmationLate = errors.New("ownership confirmation came too late")

// OwnershipCheck is a Fence that remembers, per shard, when Kafka last
// confirmed it, and asks again only for shards confirmed longer than Fresh
// ago. Asked just before each write, it is a lease: a confirmation at time
// v means the member was in the group at v, so its session cannot have
// expired, and no other instance can own the shard, before v plus the
// session timeout less a heartbeat; with Fresh well under that, a write
// made within Fresh of v lands while the shard is still this instance's.
// A process paused past Fresh (SIGSTOP, a long GC pause, a frozen VM) finds
// its confirmations stale when it resumes and asks again before writing.
type OwnershipCheck struct {
	fence Fence
	fresh time.Duration

	// asking lets one question be under way at a time: writers that
	// find the same shards stale wait for its answer instead of asking too.
	asking sync.Mutex

	mu       sync.Mutex
	verified map[int32]time.Time // when the confirmation was asked for
}

// NewOwnershipCheck makes an OwnershipCheck over fence whose confirmations
// hold for fresh.
func NewOwnershipCheck(fence Fence, fresh time.Duration) *OwnershipCheck {
	return &OwnershipCheck{fence: fence, fresh: fresh, verified: make(map[int32]time.Time)}
}

// Verify confirms shards, asking the fence for those not confirmed within
// Fresh.
func (c *OwnershipCheck) Verify(ctx context.Context, shards []int32) error {
	if len(c.stale(shards, time.Now())) == 0 {
		return nil
	}
	c.asking.Lock()
	defer c.asking.Unlock()
	now := time.Now() // monotonic: a pause of the process counts
	stale := c.stale(shards, now)
	if len(stale) == 0 {
		return nil // confirmed while this caller waited
	}
	err := c.fence.Verify(ctx, stale)
	if err == nil && time.Since(now) >= c.fresh {
		// The answer describes the moment it was given, and it took longer
		// than a confirmation lasts: the process was paused (or starved)
		// mid-question, and the group may have moved on since. A caller
		// that wrote on it would write what it decided before the pause
		// over the new owner's work.
		err = fmt.Errorf("%w: the answer took %v, longer than a confirmation holds (%v)",
			ErrConfirmationLate, time.Since(now).Round(time.Millisecond), c.fresh)
	}
	if err != nil {
		c.mu.Lock()
		for _, p := range stale {
			delete(c.verified, p)
		}
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	for _, p := range stale {
		c.verified[p] = now
	}
	c.mu.Unlock()
	return nil
}

// stale returns the shards not confirmed within Fresh of now.
func (c *OwnershipCheck) stale(shards []int32, now time.Time) []int32 {
	var stale []int32
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range shards {
		if at, ok := c.verified[p]; !ok || now.Sub(at) >= c.fresh {
			stale = append(stale, p)
		}
	}
	return stale
}
