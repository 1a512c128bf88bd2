package history

import (
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// ReadOptions says where a run's history is.
type ReadOptions struct {
	Source, Target *kafkatest.Cluster
	// Groups and Topics select the source groups and source topics of the
	// run (the target topics are their Remote names).
	Groups, Topics func(string) bool
	Remote         func(sourceTopic string) string
	// SyncsTopic is on the source unless SyncsOnTarget; CheckpointsTopic
	// is on the target.
	SyncsTopic       string
	SyncsOnTarget    bool
	CheckpointsTopic string
	// WritesUntil, if set, ends the target writes that are checkpointd's:
	// later ones (say, of a consumer failing over) are left out.
	WritesUntil time.Time
}

// Read reads a run's history from both clusters: the source groups' commits
// and the target groups' offsets from each __consumer_offsets, the offset
// syncs, and the checkpoints. The caller adds Replicated, the bound, when
// faults healed and what was active, then calls Check (or Verify).
func Read(t testing.TB, o ReadOptions) *History {
	t.Helper()
	if o.Remote == nil {
		o.Remote = func(s string) string { return s }
	}
	h := &History{Remote: o.Remote, End: time.Now()}
	targetTopic := map[string]bool{}
	for _, m := range o.Source.ReadAll(t, "__consumer_offsets") {
		r, err := messages.DecodeOffsetsRecord(m.Key, nullable(m))
		if err != nil || r.Kind != messages.OffsetCommitRecord || r.Tombstone || !o.Groups(r.Group) || !o.Topics(r.Topic) {
			continue
		}
		targetTopic[o.Remote(r.Topic)] = true
		h.Commits = append(h.Commits, Commit{Group: r.Group, TopicPartition: r.TopicPartition, Offset: r.Offset, At: time.UnixMilli(r.CommitTimestamp)})
	}
	syncsOn := o.Source
	if o.SyncsOnTarget {
		syncsOn = o.Target
	}
	for _, m := range syncsOn.ReadAll(t, o.SyncsTopic) {
		s, err := messages.DecodeOffsetSync(m.Key, m.Value)
		if err != nil || !o.Topics(s.Topic) {
			continue
		}
		h.Syncs = append(h.Syncs, Sync{OffsetSync: s, At: m.Timestamp})
	}
	for _, m := range o.Target.ReadAll(t, o.CheckpointsTopic) {
		cp, err := messages.DecodeCheckpoint(m.Key, m.Value)
		if err != nil || !o.Groups(cp.Group) {
			continue
		}
		h.Checkpoints = append(h.Checkpoints, Checkpoint{Checkpoint: cp, At: m.Timestamp, Offset: m.Offset})
	}
	for _, m := range o.Target.ReadAll(t, "__consumer_offsets") {
		r, err := messages.DecodeOffsetsRecord(m.Key, nullable(m))
		if err != nil || r.Kind != messages.OffsetCommitRecord || r.Tombstone || !o.Groups(r.Group) {
			continue
		}
		at := time.UnixMilli(r.CommitTimestamp)
		if !o.WritesUntil.IsZero() && at.After(o.WritesUntil) {
			continue
		}
		if !targetTopic[r.Topic] {
			continue
		}
		h.TargetWrites = append(h.TargetWrites, TargetWrite{Group: r.Group, TopicPartition: r.TopicPartition, Offset: r.Offset, At: at})
	}
	return h
}

func nullable(m *sarama.ConsumerMessage) []byte {
	if m.Value == nil {
		return nil
	}
	return m.Value
}

// ReplicatedRecords pairs the records of source topics with their copies on
// the target by value (each value unique in the run), per partition: where
// each source record landed.
func ReplicatedRecords(source, target []*sarama.ConsumerMessage, remote func(string) string) Records {
	type at struct {
		tp     messages.TopicPartition
		offset int64
	}
	landed := make(map[string]at, len(target))
	for _, m := range target {
		landed[m.Topic+"\x00"+string(m.Value)] = at{messages.TopicPartition{Topic: m.Topic, Partition: m.Partition}, m.Offset}
	}
	out := Records{}
	for _, m := range source {
		if l, ok := landed[remote(m.Topic)+"\x00"+string(m.Value)]; ok {
			out[l.tp] = append(out[l.tp], [2]int64{m.Offset, l.offset})
		}
	}
	for _, pairs := range out {
		slices.SortFunc(pairs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	}
	return out
}

// Verify checks h and fails t with each violation (the first 20), and logs
// what it looked at.
func Verify(t testing.TB, h *History) Stats {
	t.Helper()
	vs, st := h.Check()
	for i, v := range vs {
		if i == 20 {
			t.Errorf("history: %d more violations", len(vs)-20)
			break
		}
		t.Errorf("history: %s", v)
	}
	t.Logf("history: %d source commits, %d offset syncs, %d checkpoints, %d target writes; %d commits judged for lateness (%d not yet due), worst commit-to-target lag %v (%v after the end of a fault); %d violations",
		st.Commits, len(h.Syncs), st.Checkpoints, st.TargetWrites, st.Judged, st.NotYetDue, st.WorstLag.Round(time.Millisecond), st.WorstCatchUp.Round(time.Millisecond), len(vs))
	return st
}
