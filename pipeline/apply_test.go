package pipeline

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// applyTarget is a targetgroup.Groups whose answers the test sets.
type applyTarget struct {
	states     map[string]targetgroup.Group
	offsets    map[string]map[messages.TopicPartition]int64
	offsetErrs map[string]error
	existing   map[messages.TopicPartition]bool
	topicErrs  map[string]error
	refuse     map[messages.TopicPartition]targetgroup.Reason // what Commit answers instead of committed

	committed map[string]map[messages.TopicPartition]int64
}

func (f *applyTarget) Describe(_ context.Context, groups []string) (map[string]targetgroup.Group, error) {
	out := map[string]targetgroup.Group{}
	for _, g := range groups {
		if st, ok := f.states[g]; ok {
			out[g] = st
		}
	}
	return out, nil
}

func (f *applyTarget) Offsets(_ context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	out := map[string]map[messages.TopicPartition]int64{}
	for _, g := range groups {
		if f.offsetErrs[g] == nil {
			out[g] = maps.Clone(f.offsets[g])
		}
	}
	return out, f.offsetErrs
}

func (f *applyTarget) ExistingPartitions(context.Context, []string) (map[messages.TopicPartition]bool, map[string]error) {
	return f.existing, f.topicErrs
}

func (f *applyTarget) Commit(_ context.Context, group string, offsets map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	out := map[messages.TopicPartition]targetgroup.Reason{}
	for tp, cp := range offsets {
		if r := f.refuse[tp]; r != "" {
			out[tp] = r
			continue
		}
		if f.committed == nil {
			f.committed = map[string]map[messages.TopicPartition]int64{}
		}
		if f.committed[group] == nil {
			f.committed[group] = map[messages.TopicPartition]int64{}
		}
		f.committed[group][tp] = cp.Downstream
		out[tp] = targetgroup.Committed
	}
	return out, nil
}

func TestApplyCheckpoints(t *testing.T) {
	p0 := messages.TopicPartition{Topic: "src.orders", Partition: 0}
	p1 := messages.TopicPartition{Topic: "src.orders", Partition: 1}
	gone := messages.TopicPartition{Topic: "src.gone", Partition: 0}
	cps := func(group string, offsets map[messages.TopicPartition]int64) []messages.Checkpoint {
		var out []messages.Checkpoint
		for tp, off := range offsets {
			out = append(out, messages.Checkpoint{Group: group, TopicPartition: tp, UpstreamOffset: off * 2, DownstreamOffset: off})
		}
		return out
	}
	empty := targetgroup.Group{State: targetgroup.StateEmpty}
	both := map[messages.TopicPartition]bool{p0: true, p1: true}
	type want struct {
		action  string
		reason  targetgroup.Reason
		current int64
	}
	tests := []struct {
		name          string
		target        applyTarget
		cps           []messages.Checkpoint
		execute       bool
		want          map[messages.TopicPartition]want
		wantCommitted map[messages.TopicPartition]int64
		wantFailed    bool
		rewinds       *applyRewinds // nil: MM2's rule
		wantLogged    map[messages.TopicPartition]int64
	}{
		{
			name:   "dry run plans and writes nothing",
			target: applyTarget{states: map[string]targetgroup.Group{"g": empty}, existing: both, offsets: map[string]map[messages.TopicPartition]int64{"g": {p0: 5}}},
			cps:    cps("g", map[messages.TopicPartition]int64{p0: 10, p1: 20}),
			want:   map[messages.TopicPartition]want{p0: {ActionCommit, "", 5}, p1: {ActionCommit, "", -1}},
		},
		{
			name:          "execute commits into an idle group and never lowers it",
			target:        applyTarget{states: map[string]targetgroup.Group{"g": empty}, existing: both, offsets: map[string]map[messages.TopicPartition]int64{"g": {p0: 5, p1: 30}}},
			cps:           cps("g", map[messages.TopicPartition]int64{p0: 10, p1: 20}),
			execute:       true,
			want:          map[messages.TopicPartition]want{p0: {ActionCommitted, "", 5}, p1: {ActionSkip, targetgroup.TargetAhead, 30}},
			wantCommitted: map[messages.TopicPartition]int64{p0: 10},
		},
		{
			name:       "an active group is skipped and shows where it is",
			target:     applyTarget{states: map[string]targetgroup.Group{"g": {State: "Stable", Members: 1}}, existing: both, offsets: map[string]map[messages.TopicPartition]int64{"g": {p0: 3}}},
			cps:        cps("g", map[messages.TopicPartition]int64{p0: 10}),
			execute:    true,
			want:       map[messages.TopicPartition]want{p0: {ActionSkip, targetgroup.ActiveOnTarget, 3}},
			wantFailed: true,
		},
		{
			name:       "a group that failed to describe is not new",
			target:     applyTarget{existing: both},
			cps:        cps("g", map[messages.TopicPartition]int64{p0: 10}),
			execute:    true,
			want:       map[messages.TopicPartition]want{p0: {ActionSkip, targetgroup.DescribeFailed, -1}},
			wantFailed: true,
		},
		{
			name:          "a missing target partition is skipped, the others committed",
			target:        applyTarget{states: map[string]targetgroup.Group{"g": {State: targetgroup.StateNotFound}}, existing: both},
			cps:           cps("g", map[messages.TopicPartition]int64{p0: 10, gone: 7}),
			execute:       true,
			want:          map[messages.TopicPartition]want{p0: {ActionCommitted, "", -1}, gone: {ActionSkip, targetgroup.TargetTopicMissing, -1}},
			wantCommitted: map[messages.TopicPartition]int64{p0: 10},
			wantFailed:    true,
		},
		{
			name: "unreadable offsets keep an idle group out",
			target: applyTarget{states: map[string]targetgroup.Group{"g": empty}, existing: both,
				offsetErrs: map[string]error{"g": errors.New("coordinator down")}},
			cps:        cps("g", map[messages.TopicPartition]int64{p0: 10}),
			execute:    true,
			want:       map[messages.TopicPartition]want{p0: {ActionSkip, targetgroup.Retriable, -1}},
			wantFailed: true,
		},
		{
			name: "an unreadable topic keeps the group out instead of calling it missing",
			target: applyTarget{states: map[string]targetgroup.Group{"g": empty},
				topicErrs: map[string]error{"src.orders": errors.New("not authorized")}},
			cps:        cps("g", map[messages.TopicPartition]int64{p0: 10}),
			execute:    true,
			want:       map[messages.TopicPartition]want{p0: {ActionSkip, targetgroup.Retriable, -1}},
			wantFailed: true,
		},
		{
			name: "with the commit log, a group still at checkpointd's offset goes back; one a consumer moved does not",
			target: applyTarget{states: map[string]targetgroup.Group{"g": empty}, existing: both,
				offsets: map[string]map[messages.TopicPartition]int64{"g": {p0: 200, p1: 300}}},
			cps:     cps("g", map[messages.TopicPartition]int64{p0: 1, p1: 2}),
			execute: true,
			rewinds: &applyRewinds{ours: map[string]map[messages.TopicPartition]targetgroup.Checkpoint{
				"g": {p0: {Downstream: 200, Upstream: 400}, p1: {Downstream: 250, Upstream: 500}}}, log: &memLog{}},
			want:          map[messages.TopicPartition]want{p0: {ActionCommitted, targetgroup.Rewound, 200}, p1: {ActionSkip, targetgroup.TargetAheadMovedByConsumer, 300}},
			wantCommitted: map[messages.TopicPartition]int64{p0: 1},
			wantLogged:    map[messages.TopicPartition]int64{p0: 1},
		},
		{
			name: "a commit log that cannot be written stops the commit",
			target: applyTarget{states: map[string]targetgroup.Group{"g": empty}, existing: both,
				offsets: map[string]map[messages.TopicPartition]int64{"g": {p0: 200}}},
			cps:     cps("g", map[messages.TopicPartition]int64{p0: 1}),
			execute: true,
			rewinds: &applyRewinds{ours: map[string]map[messages.TopicPartition]targetgroup.Checkpoint{"g": {p0: {Downstream: 200, Upstream: 400}}},
				log: &memLog{err: errors.New("not authorized")}},
			want:       map[messages.TopicPartition]want{p0: {ActionFailed, targetgroup.Retriable, 200}},
			wantFailed: true,
		},
		{
			name: "a refused commit fails",
			target: applyTarget{states: map[string]targetgroup.Group{"g": empty}, existing: both,
				refuse: map[messages.TopicPartition]targetgroup.Reason{p1: targetgroup.Unauthorized}},
			cps:           cps("g", map[messages.TopicPartition]int64{p0: 10, p1: 20}),
			execute:       true,
			want:          map[messages.TopicPartition]want{p0: {ActionCommitted, "", -1}, p1: {ActionFailed, targetgroup.Unauthorized, -1}},
			wantCommitted: map[messages.TopicPartition]int64{p0: 10},
			wantFailed:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := applyCheckpoints(t.Context(), &tt.target, tt.cps, tt.execute, tt.rewinds)
			if err != nil {
				t.Fatal(err)
			}
			got := map[messages.TopicPartition]want{}
			for _, r := range rows {
				got[messages.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = want{r.Action, r.Reason, r.Current}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("rows %+v, want %+v", got, tt.want)
			}
			if !slices.IsSortedFunc(rows, func(a, b ApplyRow) int {
				return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
			}) {
				t.Errorf("rows not sorted: %+v", rows)
			}
			if !maps.Equal(tt.target.committed["g"], tt.wantCommitted) {
				t.Errorf("committed %v, want %v", tt.target.committed["g"], tt.wantCommitted)
			}
			if err := ApplyFailures(rows); (err != nil) != tt.wantFailed {
				t.Errorf("ApplyFailures = %v, want failure %v", err, tt.wantFailed)
			}
			if tt.rewinds != nil {
				if got := tt.rewinds.log.(*memLog).logged["g"]; !maps.Equal(got, tt.wantLogged) {
					t.Errorf("commit log got %v, want %v written ahead", got, tt.wantLogged)
				}
			}
		})
	}
}

// memLog is a handlers.CommitLog in memory.
type memLog struct {
	err    error
	logged map[string]map[messages.TopicPartition]int64
}

func (l *memLog) Load(context.Context, func([]byte) bool, func(string) bool) (map[string]map[messages.TopicPartition]targetgroup.Checkpoint, error) {
	return nil, l.err
}

func (l *memLog) Append(_ context.Context, cps []messages.Checkpoint) error {
	if l.err != nil {
		return l.err
	}
	if l.logged == nil {
		l.logged = map[string]map[messages.TopicPartition]int64{}
	}
	for _, cp := range cps {
		if l.logged[cp.Group] == nil {
			l.logged[cp.Group] = map[messages.TopicPartition]int64{}
		}
		l.logged[cp.Group][cp.TopicPartition] = cp.DownstreamOffset
	}
	return nil
}
