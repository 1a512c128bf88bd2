package translate

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

// partitionsOf names n partitions the way a mirrored cluster would: topics of
// 32 partitions each.
func partitionsOf(n int) []messages.TopicPartition {
	tps := make([]messages.TopicPartition, n)
	for i := range tps {
		tps[i] = messages.TopicPartition{Topic: fmt.Sprintf("us-west.orders-service.events-%04d", i/32), Partition: int32(i % 32)}
	}
	return tps
}

// syncStep is the upstream distance between syncs: offset.lag.max 100 plus the
// record that triggers the sync.
const syncStep = 101

// buildIndex gives each partition syncsPer syncs, interleaved across
// partitions as they would arrive on the sync topic.
func buildIndex(tps []messages.TopicPartition, syncsPer int) *Index {
	ix := NewIndex(Options{CheckpointsLoaded: true})
	ix.OpenGate()
	for k := range syncsPer {
		u := int64(k) * syncStep
		for _, tp := range tps {
			ix.Apply(tp, u, u+7)
		}
	}
	return ix
}

var benchSizes = []int{1, 1_000, 100_000}

func BenchmarkTranslate(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			tps := partitionsOf(n)
			const syncsPer = 200
			ix := buildIndex(tps, syncsPer)
			// Committed offsets spread over the whole history, so lookups
			// land in every slot, from the newest sync to the oldest.
			offsets := make([]int64, 1024)
			for i := range offsets {
				offsets[i] = int64(i*7919) % (syncsPer * syncStep)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var sink int64
			for i := 0; b.Loop(); i++ {
				sink += ix.Translate(tps[i%len(tps)], offsets[i%len(offsets)]).Downstream
			}
			_ = sink
		})
	}
}

// BenchmarkTranslateParallel has every P translate while one goroutine applies.
func BenchmarkTranslateParallel(b *testing.B) {
	tps := partitionsOf(1_000)
	ix := buildIndex(tps, 200)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for u := int64(200 * syncStep); ; u += syncStep {
			for _, tp := range tps {
				select {
				case <-stop:
					return
				default:
				}
				ix.Apply(tp, u, u+7)
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			ix.Translate(tps[i%len(tps)], int64(i*7919)%(200*syncStep))
			i++
		}
	})
	b.StopTimer()
	close(stop)
	<-done
}

func BenchmarkApply(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			tps := partitionsOf(n)
			ix := buildIndex(tps, 64) // a history in steady state
			u := int64(64 * syncStep)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				j := i % len(tps)
				if j == 0 {
					u += syncStep
				}
				ix.Apply(tps[j], u, u+7)
			}
		})
	}
}

// bytesPerPartition measures the heap an index holds per partition once each
// partition has syncsPer syncs behind it.
func bytesPerPartition(partitions, syncsPer int) (perPartition float64, syncsEach float64) {
	tps := partitionsOf(partitions) // not counted: the caller owns its keys
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := buildIndex(tps, syncsPer)
	runtime.GC()
	runtime.ReadMemStats(&after)
	st := ix.Stats()
	runtime.KeepAlive(ix)
	runtime.KeepAlive(tps) // else the second GC frees the keys and the difference goes negative
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(partitions), float64(st.Syncs) / float64(st.Partitions)
}

// A mirrored partition must cost at most 1 KiB with a realistic history.
func TestIndexMemoryPerPartition(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures the heap; slow under -short and -race")
	}
	for _, syncsPer := range []int{1, 100, 2_000} {
		perPartition, syncs := bytesPerPartition(2_000, syncsPer)
		t.Logf("%d syncs applied per partition: %.1f distinct stored, %.0f bytes per partition", syncsPer, syncs, perPartition)
		if perPartition > 1024 {
			t.Errorf("%d syncs per partition: %.0f bytes per partition, want at most 1024", syncsPer, perPartition)
		}
	}
}

func BenchmarkIndexMemory(b *testing.B) {
	for range b.N {
		perPartition, syncs := bytesPerPartition(10_000, 2_000)
		b.ReportMetric(perPartition, "bytes/partition")
		b.ReportMetric(syncs, "syncs/partition")
	}
}
