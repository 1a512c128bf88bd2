package handlers_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers"
	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/messages"
)

// BenchmarkOutboxEmit is the cost of handing one checkpoint to the outbox
// while it writes to an in-memory publisher: the work done under the
// decision lock per checkpoint (no tracing).
// discardPublisher counts what the outbox publishes.
type discardPublisher struct{ n atomic.Int64 }

func (p *discardPublisher) Publish(_ string, msgs ...*message.Message) error {
	p.n.Add(int64(len(msgs)))
	return nil
}
func (p *discardPublisher) Close() error { return nil }

func BenchmarkOutboxEmit(b *testing.B) {
	for _, keys := range []int{1, 1000, 100_000} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) {
			pub := &discardPublisher{}
			o := handlers.NewOutbox(pub, "source.checkpoints.internal", 0, slog.New(slog.DiscardHandler))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = o.Run(ctx, time.Second)
			}()
			cps := make([]messages.Checkpoint, keys)
			for i := range cps {
				cps[i] = messages.Checkpoint{Group: "group-" + strconv.Itoa(i/4),
					TopicPartition: messages.TopicPartition{Topic: "source.orders", Partition: int32(i % 4)}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				cp := cps[i%keys]
				cp.UpstreamOffset, cp.DownstreamOffset = int64(i), int64(i)
				o.Emit(context.Background(), cp, time.Time{})
			}
			b.StopTimer()
			cancel()
			<-done
			st := o.Stats()
			b.ReportMetric(float64(st.Published)/float64(b.N), "written/emit")
		})
	}
}

// BenchmarkSyncFanOut is the cost of one offset sync on a partition that
// many groups committed on, half of them below the sync (not decided again)
// and half at the head (each gets a new checkpoint). One op is one sync.
func BenchmarkSyncFanOut(b *testing.B) {
	for _, groups := range []int{1000, 10_000} {
		b.Run("groups="+strconv.Itoa(groups), func(b *testing.B) {
			all, err := filter.New(".*", "")
			if err != nil {
				b.Fatal(err)
			}
			c, err := handlers.NewCheckpointer(handlers.CheckpointerConfig{
				SourceAlias: "source", TargetAlias: "target", Policy: messages.DefaultReplicationPolicy{},
				Topics: all, Groups: all, Emitter: countEmitter{}, Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			tp := messages.TopicPartition{Topic: "orders", Partition: 0}
			c.ShardAssigned(0)
			c.ShardCaughtUp(ctx, 0)
			c.SyncsReadToEnd(ctx)
			c.CheckpointsReadToEnd(ctx)
			c.ApplySync(ctx, messages.OffsetSync{TopicPartition: tp})
			const head = int64(1) << 40
			for g := range groups {
				offset := int64(g)
				if g%2 == 1 {
					offset = head
				}
				c.SourceCommit(ctx, 0, messages.OffsetsRecord{Kind: messages.OffsetCommitRecord,
					Group: "group-" + strconv.Itoa(g), TopicPartition: tp, Offset: offset}, time.Time{})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				up := int64(groups) + int64(i)*100
				c.ApplySync(ctx, messages.OffsetSync{TopicPartition: tp, UpstreamOffset: up, DownstreamOffset: up})
			}
		})
	}
}

type countEmitter struct{}

func (countEmitter) Emit(context.Context, messages.Checkpoint, time.Time) {}
