package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// Commit is a source group's commit: the group will read Offset next.
type Commit struct {
	Group string
	messages.TopicPartition
	Offset int64
	At     time.Time
}

// Sync is an offset sync written to the offset-syncs topic.
type Sync struct {
	messages.OffsetSync
	At time.Time
}

// Checkpoint is a record of the checkpoints topic, in topic order (Offset).
type Checkpoint struct {
	messages.Checkpoint // TopicPartition is the target's (renamed) topic
	At                  time.Time
	Offset              int64
}

// TargetWrite is a commit of a target group, as __consumer_offsets on the
// target holds it.
type TargetWrite struct {
	Group string
	messages.TopicPartition
	Offset int64
	At     time.Time
}

// Span is when a target group had active members.
type Span struct {
	Group    string
	From, To time.Time
}

// Replication says where the source's records landed on the target.
type Replication interface {
	// Position is the target offset of the first record of the source
	// partition behind target partition tp at or after upstream offset u
	// (the end of what was replicated if there is none): how far a
	// failover may start without skipping any record at or after u.
	Position(tp messages.TopicPartition, u int64) int64
}

// Identity is the replication of a test that writes the offset syncs
// itself with each record at the same offset on both clusters.
type Identity struct{}

// Position implements Replication.
func (Identity) Position(_ messages.TopicPartition, u int64) int64 { return u }

// Records is a replication known record by record: per target partition,
// the source offsets (ascending) and the target offsets they landed at.
type Records map[messages.TopicPartition][][2]int64

// Position implements Replication.
func (r Records) Position(tp messages.TopicPartition, u int64) int64 {
	pairs := r[tp]
	i, _ := slices.BinarySearchFunc(pairs, u, func(p [2]int64, u int64) int { return cmp.Compare(p[0], u) })
	if i < len(pairs) {
		return pairs[i][1]
	}
	if len(pairs) == 0 {
		return 0
	}
	return pairs[len(pairs)-1][1] + 1
}

// History is what a run did. Every time is of the same clock (the brokers'
// and the test's run on one machine).
type History struct {
	Commits      []Commit
	Syncs        []Sync
	Checkpoints  []Checkpoint
	TargetWrites []TargetWrite
	Active       []Span
	Replicated   Replication
	// Remote names a source topic on the target (the replication policy).
	Remote func(sourceTopic string) string
	// Healed is when the last fault of the run ended (zero: none): every
	// commit made before may wait for it. Faults are finer: a commit may
	// wait for the end of a fault it was made in, or that began within
	// Bound of it, and so on.
	Healed time.Time
	Faults []Window
	// Bound is how long a source commit may take to be checkpointed and
	// to reach the target, after it was made or after Healed.
	Bound time.Duration
	// End is when the history was read: deadlines after it are not judged.
	End time.Time
	// SyncsTarget: checkpointd commits target groups
	// (sync.group.offsets.enabled); else only checkpoints are judged.
	SyncsTarget bool
	// Slack absorbs the millisecond truncation of record timestamps.
	// Zero: 5 ms.
	Slack time.Duration
}

// Window is when a fault lasted.
type Window struct{ From, To time.Time }

// deadline is when a commit made at t must be on the target: Bound after
// t, or after the end of each fault that began before that, and after
// Healed if t is before it.
func (h *History) deadline(t time.Time) time.Time {
	d := t
	if h.Healed.After(d) {
		d = h.Healed
	}
	d = d.Add(h.Bound)
	for moved := true; moved; {
		moved = false
		for _, w := range h.Faults {
			if !w.From.After(d) && !w.To.Before(t) && w.To.Add(h.Bound).After(d) {
				d, moved = w.To.Add(h.Bound), true
			}
		}
	}
	return d
}

// Violation is one broken promise.
type Violation struct {
	Rule  string // skip, checkpoint-back, target-lowered, late, active-written
	Group string
	messages.TopicPartition
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: group %s, partition %s: %s", v.Rule, v.Group, v.TopicPartition, v.Detail)
}

// Rules of Violation.
const (
	RuleSkip           = "skip"
	RuleCheckpointBack = "checkpoint-back"
	RuleTargetLowered  = "target-lowered"
	RuleLate           = "late"
	RuleActiveWritten  = "active-written"
)

// key is a (group, target partition).
type key struct {
	group string
	tp    messages.TopicPartition
}

// Stats is what Check looked at.
type Stats struct {
	Commits, Checkpoints, TargetWrites int
	Judged, NotYetDue                  int // commits whose deadline was judged, or after End
	// WorstLag is the longest time from a judged commit to the first
	// target write at its checkpoint or beyond (to the checkpoint when
	// target groups are not judged).
	WorstLag time.Duration
	// WorstCatchUp is the same, counted from the end of the fault the
	// commit met (from the commit when it met none): how long the target
	// took to catch up after a heal.
	WorstCatchUp time.Duration
}

// Check returns every violation, in a stable order, and what it looked at.
func (h *History) Check() ([]Violation, Stats) {
	if h.Slack == 0 {
		h.Slack = 5 * time.Millisecond
	}
	if h.Remote == nil {
		h.Remote = func(s string) string { return s }
	}
	commits := h.commitsByKey()
	cps := h.checkpointsByKey()
	writes := h.writesByKey()
	var out []Violation
	out = append(out, h.checkCheckpoints(commits, cps)...)
	out = append(out, h.checkTargetWrites(commits, writes)...)
	late, st := h.checkLiveness(commits, cps, writes)
	out = append(out, late...)
	out = append(out, h.checkActive(writes)...)
	st.Commits, st.Checkpoints, st.TargetWrites = len(h.Commits), len(h.Checkpoints), len(h.TargetWrites)
	return out, st
}

func (h *History) commitsByKey() map[key][]Commit {
	m := make(map[key][]Commit)
	for _, c := range h.Commits {
		k := key{c.Group, messages.TopicPartition{Topic: h.Remote(c.Topic), Partition: c.Partition}}
		m[k] = append(m[k], c)
	}
	for _, cs := range m {
		slices.SortStableFunc(cs, func(a, b Commit) int { return a.At.Compare(b.At) })
	}
	return m
}

func (h *History) checkpointsByKey() map[key][]Checkpoint {
	m := make(map[key][]Checkpoint)
	for _, c := range h.Checkpoints {
		k := key{c.Group, c.TopicPartition}
		m[k] = append(m[k], c)
	}
	for _, cs := range m {
		slices.SortStableFunc(cs, func(a, b Checkpoint) int { return cmp.Compare(a.Offset, b.Offset) })
	}
	return m
}

func (h *History) writesByKey() map[key][]TargetWrite {
	m := make(map[key][]TargetWrite)
	for _, w := range h.TargetWrites {
		k := key{w.Group, w.TopicPartition}
		m[k] = append(m[k], w)
	}
	for _, ws := range m {
		slices.SortStableFunc(ws, func(a, b TargetWrite) int { return a.At.Compare(b.At) })
	}
	return m
}

// latestAt is the last commit made at or before t, if any.
func (h *History) latestAt(cs []Commit, t time.Time) (Commit, bool) {
	i, _ := slices.BinarySearchFunc(cs, t.Add(h.Slack), func(c Commit, t time.Time) int {
		if c.At.After(t) {
			return 1
		}
		return -1
	})
	if i == 0 {
		return Commit{}, false
	}
	return cs[i-1], true
}

// checkCheckpoints: no checkpoint beyond the position of the commit it
// translates, which the group made before it; none back without a rewind.
func (h *History) checkCheckpoints(commits map[key][]Commit, cps map[key][]Checkpoint) []Violation {
	var out []Violation
	for _, k := range sortedKeys(cps) {
		var prev *Checkpoint
		for i := range cps[k] {
			cp := &cps[k][i]
			pos := h.Replicated.Position(k.tp, cp.UpstreamOffset)
			if cp.DownstreamOffset > pos {
				out = append(out, Violation{RuleSkip, k.group, k.tp, fmt.Sprintf(
					"checkpoint at offset %d translates source offset %d to %d, beyond %d, the target position of the first record the group had not consumed: a failover skips %d records",
					cp.Offset, cp.UpstreamOffset, cp.DownstreamOffset, pos, cp.DownstreamOffset-pos)})
			}
			if !h.committedBefore(commits[k], cp.UpstreamOffset, cp.At) {
				out = append(out, Violation{RuleSkip, k.group, k.tp, fmt.Sprintf(
					"checkpoint at offset %d has source offset %d, which the group had not committed by %s",
					cp.Offset, cp.UpstreamOffset, cp.At.Format(time.StampMilli))})
			}
			if prev != nil && cp.DownstreamOffset < prev.DownstreamOffset && !(cp.UpstreamOffset < prev.UpstreamOffset) {
				out = append(out, Violation{RuleCheckpointBack, k.group, k.tp, fmt.Sprintf(
					"checkpoint at offset %d went back from %d (source %d) to %d (source %d) without the source group going back",
					cp.Offset, prev.DownstreamOffset, prev.UpstreamOffset, cp.DownstreamOffset, cp.UpstreamOffset)})
			}
			prev = cp
		}
	}
	return out
}

// committedBefore reports whether the group committed offset u by t.
func (h *History) committedBefore(cs []Commit, u int64, t time.Time) bool {
	for _, c := range cs {
		if c.At.After(t.Add(h.Slack)) {
			return false
		}
		if c.Offset == u {
			return true
		}
	}
	return false
}

// justified is, of the source commits that may justify a target offset at
// t (the one current Bound before t, and every one since), the one with the
// highest target position, and that position.
func (h *History) justified(cs []Commit, tp messages.TopicPartition, t time.Time) (Commit, int64, bool) {
	best, bestPos, found := Commit{}, int64(-1), false
	if c, ok := h.latestAt(cs, t.Add(-h.Bound)); ok {
		best, bestPos, found = c, h.Replicated.Position(tp, c.Offset), true
	}
	for _, c := range cs {
		if c.At.After(t.Add(h.Slack)) {
			break
		}
		if c.At.Before(t.Add(-h.Bound)) {
			continue
		}
		if p := h.Replicated.Position(tp, c.Offset); p > bestPos {
			best, bestPos, found = c, p, true
		}
	}
	return best, bestPos, found
}

// checkTargetWrites: no target offset beyond the position of what the
// source group had committed within the last Bound; none lowered unless the
// source group was below it by then.
func (h *History) checkTargetWrites(commits map[key][]Commit, writes map[key][]TargetWrite) []Violation {
	var out []Violation
	for _, k := range sortedKeys(writes) {
		cs := commits[k]
		var prev *TargetWrite
		for i := range writes[k] {
			w := &writes[k][i]
			best, bestPos, found := h.justified(cs, k.tp, w.At)
			switch {
			case !found:
				out = append(out, Violation{RuleSkip, k.group, k.tp, fmt.Sprintf(
					"target offset %d written at %s before the source group committed anything",
					w.Offset, w.At.Format(time.StampMilli))})
			case w.Offset > bestPos:
				out = append(out, Violation{RuleSkip, k.group, k.tp, fmt.Sprintf(
					"target offset %d written at %s is beyond %d, the target position of the first record the source group had not consumed (source offset %d committed at %s): a failover skips %d records",
					w.Offset, w.At.Format(time.StampMilli), bestPos, best.Offset, best.At.Format(time.StampMilli), w.Offset-bestPos)})
			}
			if prev != nil && w.Offset < prev.Offset {
				c, ok := h.latestAt(cs, w.At)
				if !ok || h.Replicated.Position(k.tp, c.Offset) >= prev.Offset {
					out = append(out, Violation{RuleTargetLowered, k.group, k.tp, fmt.Sprintf(
						"target offset lowered from %d (at %s) to %d (at %s) without the source group going back (its latest commit, source offset %d, is at target position %d)",
						prev.Offset, prev.At.Format(time.StampMilli), w.Offset, w.At.Format(time.StampMilli), c.Offset, h.Replicated.Position(k.tp, c.Offset))})
				}
			}
			prev = w
		}
	}
	return out
}

// checkLiveness: every commit is checkpointed (by it or a later commit)
// within its deadline and, when checkpointd syncs target groups, the target
// is at that checkpoint by then; unless a later commit went lower before
// the deadline (a rewind decides then) or the group was active on the
// target.
func (h *History) checkLiveness(commits map[key][]Commit, cps map[key][]Checkpoint, writes map[key][]TargetWrite) ([]Violation, Stats) {
	var out []Violation
	var st Stats
	// Syncs written after End cannot matter to a deadline before it; a
	// sync written after a commit's deadline is counted as if before,
	// which only makes a commit more likely judged late, never less.
	syncs := h.syncsByKey(h.End)
	for _, k := range sortedKeys(commits) {
		cs := commits[k]
		for i, c := range cs {
			deadline := h.deadline(c.At)
			if deadline.After(h.End) {
				st.NotYetDue++
				continue
			}
			rewound := false
			later := map[int64]bool{c.Offset: true}
			for _, d := range cs[i+1:] {
				if d.At.After(deadline) {
					break
				}
				if d.Offset < c.Offset {
					rewound = true
				}
				later[d.Offset] = true
			}
			if rewound {
				continue
			}
			st.Judged++
			got := h.checkpointOf(cps[k], syncs[k.tp], c, deadline, later)
			if got == nil {
				out = append(out, Violation{RuleLate, k.group, k.tp, fmt.Sprintf(
					"source offset %d committed at %s has no checkpoint by %s (bound %s)",
					c.Offset, c.At.Format(time.StampMilli), deadline.Format(time.StampMilli), h.Bound)})
				continue
			}
			lag := max(got.At.Sub(c.At), 0)
			if !h.SyncsTarget || h.activeBetween(k.group, c.At, deadline) {
				st.WorstLag = max(st.WorstLag, lag)
				continue
			}
			// The target at the deadline: at the checkpoint or beyond,
			// never beyond what the source group had consumed then.
			w, ok := lastBefore(writes[k], deadline)
			if !ok || w.Offset < got.DownstreamOffset {
				at := "nothing"
				if ok {
					at = fmt.Sprintf("%d", w.Offset)
				}
				out = append(out, Violation{RuleLate, k.group, k.tp, fmt.Sprintf(
					"source offset %d committed at %s, checkpointed as %d at %s, is not on the target by %s (bound %s): the target is at %s",
					c.Offset, c.At.Format(time.StampMilli), got.DownstreamOffset, got.At.Format(time.StampMilli), deadline.Format(time.StampMilli), h.Bound, at)})
				continue
			}
			if now, pos, ok := h.justified(cs, k.tp, deadline); ok && w.Offset > pos {
				out = append(out, Violation{RuleSkip, k.group, k.tp, fmt.Sprintf(
					"target offset %d (written at %s) is still beyond %d at %s, the target position of the source group's commit of %d at %s (bound %s): a failover then skips %d records",
					w.Offset, w.At.Format(time.StampMilli), pos, deadline.Format(time.StampMilli), now.Offset, now.At.Format(time.StampMilli), h.Bound, w.Offset-pos)})
				continue
			}
			// The lag: to the first write that put the target there.
			for _, w := range writes[k] {
				if w.At.After(c.At.Add(-h.Slack)) && w.Offset >= got.DownstreamOffset {
					lag = max(lag, w.At.Sub(c.At))
					st.WorstCatchUp = max(st.WorstCatchUp, w.At.Sub(deadline.Add(-h.Bound)))
					break
				}
			}
			st.WorstLag = max(st.WorstLag, lag)
		}
	}
	return out, st
}

// checkpointOf is the checkpoint that carries commit c (or a later commit
// of the same run, offsets in later) by deadline: the first written after
// c that says c's offset, a later one, or a lower one that translates the
// same (no offset sync between them: MM2 writes no checkpoint that moves
// nothing); else the latest one before c if it says c's offset or one that
// translates the same.
func (h *History) checkpointOf(cps []Checkpoint, syncs []int64, c Commit, deadline time.Time, later map[int64]bool) *Checkpoint {
	same := func(cp *Checkpoint) bool {
		return cp.UpstreamOffset == c.Offset || cp.UpstreamOffset < c.Offset && !syncIn(syncs, cp.UpstreamOffset, c.Offset)
	}
	var before *Checkpoint
	for j := range cps {
		cp := &cps[j]
		if cp.At.After(deadline) {
			break
		}
		if cp.At.Before(c.At.Add(-h.Slack)) {
			before = cp
			continue
		}
		if later[cp.UpstreamOffset] || same(cp) {
			return cp
		}
	}
	if before != nil && same(before) {
		return before
	}
	return nil
}

// syncIn reports whether a sync's upstream offset is in [from, to]: then
// from and to translate differently (from at a sync maps to it exactly, an
// offset past it one further).
func syncIn(syncs []int64, from, to int64) bool {
	i, _ := slices.BinarySearch(syncs, from)
	return i < len(syncs) && syncs[i] <= to
}

// syncsByKey are the upstream offsets of the offset syncs written by
// until, per target partition, ascending.
func (h *History) syncsByKey(until time.Time) map[messages.TopicPartition][]int64 {
	m := make(map[messages.TopicPartition][]int64)
	for _, s := range h.Syncs {
		if s.At.After(until) {
			continue
		}
		tp := messages.TopicPartition{Topic: h.Remote(s.Topic), Partition: s.Partition}
		m[tp] = append(m[tp], s.UpstreamOffset)
	}
	for _, us := range m {
		slices.Sort(us)
	}
	return m
}

// lastBefore is the last write at or before t.
func lastBefore(ws []TargetWrite, t time.Time) (TargetWrite, bool) {
	var last TargetWrite
	ok := false
	for _, w := range ws {
		if w.At.After(t) {
			break
		}
		last, ok = w, true
	}
	return last, ok
}

func (h *History) activeBetween(group string, from, to time.Time) bool {
	for _, s := range h.Active {
		if s.Group == group && s.From.Before(to) && s.To.After(from) {
			return true
		}
	}
	return false
}

// checkActive: no target write while the group had members.
func (h *History) checkActive(writes map[key][]TargetWrite) []Violation {
	var out []Violation
	for _, k := range sortedKeys(writes) {
		for _, w := range writes[k] {
			for _, s := range h.Active {
				if s.Group == w.Group && !w.At.Before(s.From) && !w.At.After(s.To) {
					out = append(out, Violation{RuleActiveWritten, k.group, k.tp, fmt.Sprintf(
						"target offset %d written at %s while the group had active members (%s to %s)",
						w.Offset, w.At.Format(time.StampMilli), s.From.Format(time.StampMilli), s.To.Format(time.StampMilli))})
				}
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[key]V) []key {
	ks := make([]key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b key) int {
		return cmp.Or(strings.Compare(a.group, b.group), strings.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	return ks
}
