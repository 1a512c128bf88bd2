package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// countingObserver counts the calls it gets.
type countingObserver struct {
	commits, syncs, emitted, skipped, malformed, gate, results int
}

func (o *countingObserver) SourceCommitRead(context.Context, messages.OffsetsRecord, time.Time) {
	o.commits++
}
func (o *countingObserver) OffsetSyncApplied(context.Context, messages.OffsetSync) { o.syncs++ }
func (o *countingObserver) CheckpointEmitted(context.Context, messages.Checkpoint, time.Time) {
	o.emitted++
}
func (o *countingObserver) CheckpointSkipped(context.Context, string, messages.TopicPartition, int64, messages.SkipReason) {
	o.skipped++
}
func (o *countingObserver) RecordMalformed(string, int32, int64, error) { o.malformed++ }
func (o *countingObserver) GateOpened()                                 { o.gate++ }
func (o *countingObserver) TargetResult(context.Context, string, messages.TopicPartition, targetgroup.Reason, time.Time, time.Time) {
	o.results++
}

func TestJoinObservers(t *testing.T) {
	a, b := &countingObserver{}, &countingObserver{}
	for _, tt := range []struct {
		name string
		obs  []Observer
		want []*countingObserver
	}{
		{"none", nil, nil},
		{"nil only", []Observer{nil}, nil},
		{"one and nil", []Observer{nil, a}, []*countingObserver{a}},
		{"two", []Observer{a, b}, []*countingObserver{a, b}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			*a, *b = countingObserver{}, countingObserver{}
			o := JoinObservers(tt.obs...)
			ctx := context.Background()
			o.SourceCommitRead(ctx, messages.OffsetsRecord{}, time.Time{})
			o.OffsetSyncApplied(ctx, messages.OffsetSync{})
			o.CheckpointEmitted(ctx, messages.Checkpoint{}, time.Time{})
			o.CheckpointSkipped(ctx, "g", messages.TopicPartition{}, 1, messages.SkipNotNewer)
			o.RecordMalformed("t", 0, 0, nil)
			o.GateOpened()
			o.TargetResult(ctx, "g", messages.TopicPartition{}, targetgroup.Committed, time.Time{}, time.Time{})
			for _, w := range tt.want {
				if *w != (countingObserver{1, 1, 1, 1, 1, 1, 1}) {
					t.Errorf("observer got %+v, want one call of each", *w)
				}
			}
			if len(tt.want) == 1 && o != Observer(tt.want[0]) {
				t.Errorf("one observer is returned as it is, got %T", o)
			}
		})
	}
}
