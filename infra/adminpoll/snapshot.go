package adminpoll

import (
	"cmp"
	"slices"

	"github.com/checkpointd/checkpointd/messages"
)

// commit is a group's committed position on one partition as OffsetFetch
// reports it.
type commit struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// groupOffsets are one group's commits.
type groupOffsets map[messages.TopicPartition]commit

// snapshot is what the consumer of the messages has been told: per group,
// its last delivered commits.
type snapshot map[string]groupOffsets

// pollResult is one poll of the source cluster.
type pollResult struct {
	// offsets holds every group whose offsets were fetched, including
	// groups that have none.
	offsets map[string]groupOffsets
	// failed holds groups that were listed but whose offsets could not be
	// fetched; what was said about them before still stands.
	failed map[string]error
	// complete: every broker answered the listing, so a group not listed
	// is gone. Without it an unlisted group may just live on a broker that
	// did not answer, and is left alone.
	complete bool
}

// change is one record to deliver: a new or changed commit, or a deletion
// (Commit nil).
type change struct {
	Group  string
	TP     messages.TopicPartition
	Commit *commit
}

// diff lists what changed between what was told and a poll, ordered by
// group, topic and partition.
func diff(told snapshot, poll pollResult) []change {
	var out []change
	for group, now := range poll.offsets {
		before := told[group]
		for tp, c := range now {
			if old, ok := before[tp]; !ok || old != c {
				out = append(out, change{Group: group, TP: tp, Commit: &c})
			}
		}
		for tp := range before {
			if _, ok := now[tp]; !ok {
				out = append(out, change{Group: group, TP: tp})
			}
		}
	}
	if poll.complete {
		for group, before := range told {
			_, fetched := poll.offsets[group]
			_, failed := poll.failed[group]
			if fetched || failed {
				continue
			}
			for tp := range before {
				out = append(out, change{Group: group, TP: tp})
			}
		}
	}
	slices.SortFunc(out, func(a, b change) int {
		return cmp.Or(
			cmp.Compare(a.Group, b.Group),
			cmp.Compare(a.TP.Topic, b.TP.Topic),
			cmp.Compare(a.TP.Partition, b.TP.Partition))
	})
	return out
}

// apply records that ch was delivered.
func (s snapshot) apply(ch change) {
	if ch.Commit != nil {
		if s[ch.Group] == nil {
			s[ch.Group] = make(groupOffsets)
		}
		s[ch.Group][ch.TP] = *ch.Commit
		return
	}
	delete(s[ch.Group], ch.TP)
	if len(s[ch.Group]) == 0 {
		delete(s, ch.Group)
	}
}
