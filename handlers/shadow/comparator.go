// Package shadow compares what checkpointd decides, running in shadow mode
// beside MM2's checkpoint connector, with the checkpoints MM2 writes and with
// the target groups' committed offsets. Pure: the pipeline feeds it.
package shadow

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// Status is how checkpointd's checkpoint for one (group, target partition)
// compares with MM2's.
type Status string

// The statuses of a Row.
const (
	Equal              Status = "equal"
	Ahead              Status = "checkpointd_ahead"
	Behind             Status = "checkpointd_behind"
	MM2Missing         Status = "mm2_missing"
	CheckpointdMissing Status = "checkpointd_missing"
)

// Statuses lists every Status, in report order.
var Statuses = []Status{Equal, Ahead, Behind, MM2Missing, CheckpointdMissing}

// Reasons a Row gives for checkpointd being lower than MM2 (or having no
// checkpoint), beside the Checkpointer's skip reasons (messages.SkipReason).
const (
	// ReasonSourceRewind: the latest source commit checkpointd evaluated is
	// below the one MM2 translated, and it saw the group at or past MM2's
	// before: the source group went back, and checkpointd follows it first
	// (MM2 does on its next emit).
	ReasonSourceRewind = "source_rewind"
	// ReasonCommitNotSeen: MM2 translated a source commit checkpointd has
	// not seen. A lag that should not last; nothing explains it.
	ReasonCommitNotSeen = "source_commit_not_seen"
	// ReasonLowerTranslation: checkpointd translated the same or a later
	// source commit to a lower target offset than MM2 did, and no rule of
	// its own says why: a disagreement to look into.
	ReasonLowerTranslation = "lower_translation"
	// ReasonNoDecision: checkpointd neither decided nor skipped the pair.
	ReasonNoDecision = "no_decision"
	// ReasonFilteredGroup: checkpointd's group filter excludes the group.
	ReasonFilteredGroup = "filtered_group"
)

// explainsLower reports whether a skip reason is a rule that says why
// checkpointd has a lower checkpoint than MM2, or none: its filters, its
// policy, or no translation for the commit. "not_newer" is not one: it
// means checkpointd's translation was not above what it held.
func explainsLower(reason string) bool {
	switch reason {
	case messages.SkipNoSyncYet.String(), messages.SkipBehindOldestSync.String(), messages.SkipFilteredTopic.String(),
		messages.SkipNoCommit.String(), messages.SkipVetoed.String(), ReasonFilteredGroup, ReasonSourceRewind:
		return true
	}
	return false
}

// Row is the comparison of one (group, target partition). Offsets are
// target (downstream) offsets unless named upstream; -1 is none.
type Row struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Status    Status `json:"status"`

	Checkpointd         int64 `json:"checkpointd"`
	CheckpointdUpstream int64 `json:"checkpointd_upstream"`
	// Carried: checkpointd's checkpoint is the one the checkpoints topic
	// held when it started (it decided nothing newer since).
	Carried     bool  `json:"carried,omitempty"`
	MM2         int64 `json:"mm2"`
	MM2Upstream int64 `json:"mm2_upstream"`
	// Target is the target group's committed offset, -1 if it has none or
	// it was not read yet.
	Target int64 `json:"target"`

	// AheadBy is how many records checkpointd's checkpoint is past MM2's.
	AheadBy int64 `json:"ahead_by,omitempty"`
	// TargetBehindBy is how many records the target group's offset is
	// below checkpointd's checkpoint: what a consumer failing over now
	// would read again that checkpointd would have spared it (0 when the
	// target is at or past it, or unknown).
	TargetBehindBy int64 `json:"target_behind_by,omitempty"`
	// EarlierSeconds is how long before MM2 wrote its latest checkpoint
	// checkpointd had decided that offset or a higher one (nil: unknown,
	// or checkpointd was not earlier).
	EarlierSeconds *float64 `json:"earlier_seconds,omitempty"`
	// Reason says why checkpointd is lower than MM2 or has no checkpoint.
	Reason string `json:"reason,omitempty"`
	// Unexplained: checkpointd would have been lower than MM2 (or written
	// nothing) and no rule says why.
	Unexplained bool `json:"unexplained,omitempty"`
}

// Observer hears what the metrics count.
type Observer interface {
	// FreshnessGained: MM2 wrote a checkpoint d after checkpointd had
	// decided the same offset or a higher one.
	FreshnessGained(d time.Duration)
}

// Config configures a Comparator.
type Config struct {
	// Rename maps an upstream topic to its name on the target (the
	// replication policy); the Checkpointer reports skips by upstream
	// partition, checkpoints by target partition.
	Rename func(upstreamTopic string) string
	// Groups is checkpointd's group filter; nil takes every group.
	Groups   func(group string) bool
	Observer Observer // nil: none
}

// maxMarks bounds the decisions kept per pair to date MM2's checkpoints
// with. Dropping the oldest only makes the freshness reported smaller.
const maxMarks = 64

// Comparator keeps, per (group, target partition), checkpointd's latest
// decision, MM2's latest checkpoint and the target group's offset. Safe for
// concurrent use.
type Comparator struct {
	cfg   Config
	mu    sync.Mutex
	pairs map[key]*pair
}

type key struct {
	group string
	tp    messages.TopicPartition
}

type pair struct {
	ours, oursUp int64
	oursSet      bool
	carried      bool
	// marks are checkpointd's decisions in increasing target offset, each
	// with when it was first reached since the last time it went down.
	marks  []mark
	lastUp int64  // the source commit of checkpointd's latest evaluation
	maxUp  int64  // the highest source commit checkpointd saw for the pair
	skip   string // the last skip reason since the last decision

	mm2, mm2Up int64
	mm2Set     bool
	earlier    *time.Duration

	target    int64
	targetSet bool
}

type mark struct {
	offset int64
	at     time.Time
}

// New returns an empty Comparator.
func New(cfg Config) *Comparator {
	if cfg.Rename == nil {
		cfg.Rename = func(t string) string { return t }
	}
	return &Comparator{cfg: cfg, pairs: make(map[key]*pair)}
}

// SetObserver replaces Config.Observer.
func (c *Comparator) SetObserver(o Observer) {
	c.mu.Lock()
	c.cfg.Observer = o
	c.mu.Unlock()
}

func (c *Comparator) get(group string, tp messages.TopicPartition) *pair {
	k := key{group, tp}
	p := c.pairs[k]
	if p == nil {
		p = &pair{lastUp: -1, maxUp: -1, target: -1}
		c.pairs[k] = p
	}
	return p
}

// Restored takes a checkpoint read from the checkpoints topic before the
// gate opened: where both MM2 and checkpointd start from (a switch from MM2
// starts from it too).
func (c *Comparator) Restored(cp messages.Checkpoint, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.get(cp.Group, cp.TopicPartition)
	p.mm2, p.mm2Up, p.mm2Set, p.earlier = cp.DownstreamOffset, cp.UpstreamOffset, true, nil
	if !p.oursSet || p.carried {
		p.ours, p.oursUp, p.oursSet, p.carried = cp.DownstreamOffset, cp.UpstreamOffset, true, true
		p.marks = []mark{{cp.DownstreamOffset, at}}
	}
}

// MM2 takes a checkpoint another writer (MM2) put on the checkpoints topic
// after the gate opened, written at at (its record timestamp).
func (c *Comparator) MM2(cp messages.Checkpoint, at time.Time) {
	c.mu.Lock()
	p := c.get(cp.Group, cp.TopicPartition)
	p.mm2, p.mm2Up, p.mm2Set, p.earlier = cp.DownstreamOffset, cp.UpstreamOffset, true, nil
	// The first of checkpointd's decisions at or past MM2's offset, in the
	// run of them that has not gone below it since.
	i, _ := slices.BinarySearchFunc(p.marks, cp.DownstreamOffset, func(m mark, off int64) int { return cmp.Compare(m.offset, off) })
	var gained *time.Duration
	if i < len(p.marks) && !p.marks[i].at.After(at) {
		d := at.Sub(p.marks[i].at)
		p.earlier, gained = &d, &d
	}
	obs := c.cfg.Observer
	c.mu.Unlock()
	if gained != nil && obs != nil {
		obs.FreshnessGained(*gained)
	}
}

// Decided takes a checkpoint checkpointd would have written at at.
func (c *Comparator) Decided(cp messages.Checkpoint, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.get(cp.Group, cp.TopicPartition)
	p.ours, p.oursUp, p.oursSet, p.carried, p.skip = cp.DownstreamOffset, cp.UpstreamOffset, true, false, ""
	p.lastUp, p.maxUp = cp.UpstreamOffset, max(p.maxUp, cp.UpstreamOffset)
	switch n := len(p.marks); {
	case n > 0 && cp.DownstreamOffset < p.marks[n-1].offset:
		// Gone down (a source rewind): the offsets above were left.
		i, _ := slices.BinarySearchFunc(p.marks, cp.DownstreamOffset, func(m mark, off int64) int { return cmp.Compare(m.offset, off) })
		p.marks = append(p.marks[:i], mark{cp.DownstreamOffset, at})
	case n == 0 || cp.DownstreamOffset > p.marks[n-1].offset:
		if n == maxMarks {
			p.marks = append(p.marks[:0], p.marks[1:]...)
		}
		p.marks = append(p.marks, mark{cp.DownstreamOffset, at})
	}
}

// Skipped takes a Checkpointer evaluation that gave no checkpoint, for
// group's upstream partition tp with the source commit upstream (-1 none).
func (c *Comparator) Skipped(group string, tp messages.TopicPartition, upstream int64, reason messages.SkipReason) {
	if reason == messages.SkipGateClosed {
		return // nothing decided yet; not a verdict on the pair
	}
	renamed := messages.TopicPartition{Topic: c.cfg.Rename(tp.Topic), Partition: tp.Partition}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pairs[key{group, renamed}]
	if p == nil {
		if reason == messages.SkipFilteredTopic {
			return // kept only once MM2 writes a checkpoint for it
		}
		p = c.get(group, renamed)
	}
	p.skip = reason.String()
	p.lastUp, p.maxUp = upstream, max(p.maxUp, upstream)
}

// Target takes the target group's committed offsets (a group without any
// gets an empty map).
func (c *Comparator) Target(group string, offsets map[messages.TopicPartition]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.pairs {
		if k.group != group {
			continue
		}
		if off, ok := offsets[k.tp]; ok {
			p.target, p.targetSet = off, true
		} else {
			p.target, p.targetSet = -1, false
		}
	}
}

// Groups returns the groups the comparator holds pairs of, sorted.
func (c *Comparator) Groups() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[string]struct{})
	for k := range c.pairs {
		seen[k.group] = struct{}{}
	}
	out := make([]string, 0, len(seen))
	for g := range seen {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// Report compares every pair of the groups keep accepts (nil: all) that
// checkpointd or MM2 has a checkpoint for, sorted by group, topic and
// partition.
func (c *Comparator) Report(keep func(group string) bool) []Row {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows := make([]Row, 0, len(c.pairs))
	for k, p := range c.pairs {
		if keep != nil && !keep(k.group) {
			continue
		}
		if r, ok := c.row(k, p); ok {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return rows
}

func (c *Comparator) row(k key, p *pair) (Row, bool) {
	r := Row{Group: k.group, Topic: k.tp.Topic, Partition: k.tp.Partition,
		Checkpointd: -1, CheckpointdUpstream: -1, MM2: -1, MM2Upstream: -1, Target: p.target, Carried: p.carried}
	if p.oursSet {
		r.Checkpointd, r.CheckpointdUpstream = p.ours, p.oursUp
		if p.targetSet && p.target >= 0 && p.ours > p.target {
			r.TargetBehindBy = p.ours - p.target
		}
	}
	if p.mm2Set {
		r.MM2, r.MM2Upstream = p.mm2, p.mm2Up
	}
	switch {
	case !p.oursSet && !p.mm2Set:
		return r, false
	case !p.mm2Set:
		r.Status = MM2Missing
	case !p.oursSet:
		r.Status = CheckpointdMissing
		r.Reason = cmp.Or(p.skip, ReasonNoDecision)
		if c.cfg.Groups != nil && !c.cfg.Groups(k.group) {
			r.Reason = ReasonFilteredGroup
		}
		r.Unexplained = !explainsLower(r.Reason)
	case p.ours >= p.mm2:
		r.Status, r.AheadBy = Equal, p.ours-p.mm2
		if r.AheadBy > 0 {
			r.Status = Ahead
		}
		if p.earlier != nil {
			s := p.earlier.Seconds()
			r.EarlierSeconds = &s
		}
	default:
		r.Status = Behind
		switch {
		case p.maxUp < p.mm2Up:
			r.Reason = ReasonCommitNotSeen
		case p.lastUp < p.mm2Up:
			r.Reason = ReasonSourceRewind
		case explainsLower(p.skip):
			r.Reason = p.skip
		default:
			r.Reason = ReasonLowerTranslation
		}
		r.Unexplained = !explainsLower(r.Reason)
	}
	return r, true
}

// Counts is how many rows of a report have each status, and how many are
// lower than MM2 without a rule that says why.
type Counts struct {
	ByStatus    map[Status]int `json:"by_status"`
	Unexplained int            `json:"unexplained"`
}

// Count tallies rows.
func Count(rows []Row) Counts {
	c := Counts{ByStatus: make(map[Status]int, len(Statuses))}
	for _, s := range Statuses {
		c.ByStatus[s] = 0
	}
	for _, r := range rows {
		c.ByStatus[r.Status]++
		if r.Unexplained {
			c.Unexplained++
		}
	}
	return c
}
