package handlers

import (
	"math"
	"testing"

	"github.com/checkpointd/checkpointd/handlers/filter"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// Offset syncs that decode but cannot be right are skipped and counted as
// malformed: negative offsets or partitions, a partition the source topic
// does not have. Trailing bytes are accepted, as MM2 does, and counted.
func TestOffsetSyncChecks(t *testing.T) {
	const syncs = "mm2-offset-syncs.target.internal"
	tp := func(topic string, p int32) messages.TopicPartition {
		return messages.TopicPartition{Topic: topic, Partition: p}
	}
	// orders has 4 partitions, gone is unknown to the source (cannot tell).
	partitions := func(topic string, p int32) (bool, bool) {
		if topic == "orders" {
			return p >= 0 && p < 4, true
		}
		return true, false
	}
	for _, tc := range []struct {
		name       string
		sync       messages.OffsetSync
		key, value []byte // appended to the sync's own bytes
		applied    bool
		trailing   int64
	}{
		{"plausible", syncOf(tp("orders", 3), 10, 12), nil, nil, true, 0},
		{"negative upstream offset", syncOf(tp("orders", 0), -5, 12), nil, nil, false, 0},
		{"negative downstream offset", syncOf(tp("orders", 0), 5, math.MinInt64), nil, nil, false, 0},
		{"negative partition", syncOf(tp("orders", -3), 5, 5), nil, nil, false, 0},
		{"partition 2^30 the topic does not have", syncOf(tp("orders", 1<<30), 5, 5), nil, nil, false, 0},
		{"partition just past the last", syncOf(tp("orders", 4), 5, 5), nil, nil, false, 0},
		{"topic the source cannot tell about", syncOf(tp("gone", 1<<30), 5, 5), nil, nil, true, 0},
		{"1 MB after a valid value", syncOf(tp("orders", 1), 5, 5), nil, make([]byte, 1<<20), true, 1},
		{"bytes after a valid key", syncOf(tp("orders", 1), 5, 5), []byte{7}, nil, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			all, _ := filter.New(".*", "")
			c, err := NewCheckpointer(CheckpointerConfig{
				SourceAlias: "source", TargetAlias: "target", Policy: messages.DefaultReplicationPolicy{},
				Topics: all, Groups: all, Emitter: rec, Observer: rec, Partitions: partitions,
			})
			if err != nil {
				t.Fatal(err)
			}
			key := append(tc.sync.Key(), tc.key...)
			value := append(tc.sync.Value(), tc.value...)
			if err := c.HandleOffsetSync(envelope.FromRecord(envelope.Record{Topic: syncs, Key: key, Value: value})); err != nil {
				t.Fatal(err)
			}
			applied := c.Index().Stats().Syncs == 1
			if applied != tc.applied || (rec.malformed == 0) != tc.applied {
				t.Errorf("%v: applied %v, malformed %d; want applied %v", tc.sync, applied, rec.malformed, tc.applied)
			}
			if n := c.SyncsWithTrailingBytes(); n != tc.trailing {
				t.Errorf("SyncsWithTrailingBytes = %d, want %d", n, tc.trailing)
			}
		})
	}
}
