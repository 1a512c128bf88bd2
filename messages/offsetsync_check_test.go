package messages_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/checkpointd/checkpointd/messages"
)

func TestOffsetSyncCheck(t *testing.T) {
	tp := func(p int32) messages.TopicPartition { return messages.TopicPartition{Topic: "orders", Partition: p} }
	for _, tc := range []struct {
		name string
		sync messages.OffsetSync
		want string // "" = plausible; else a substring of the error
	}{
		{"zero", messages.OffsetSync{TopicPartition: tp(0)}, ""},
		{"largest", messages.OffsetSync{TopicPartition: tp(math.MaxInt32), UpstreamOffset: math.MaxInt64, DownstreamOffset: math.MaxInt64}, ""},
		{"negative partition", messages.OffsetSync{TopicPartition: tp(-3), UpstreamOffset: 5, DownstreamOffset: 5}, "partition -3"},
		{"negative upstream", messages.OffsetSync{TopicPartition: tp(1), UpstreamOffset: -1, DownstreamOffset: 5}, "upstreamOffset -1"},
		{"negative downstream", messages.OffsetSync{TopicPartition: tp(1), UpstreamOffset: 5, DownstreamOffset: math.MinInt64}, "offset -9223372036854775808"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sync.Check()
			if tc.want == "" {
				if err != nil {
					t.Errorf("Check(%v) = %v, want nil", tc.sync, err)
				}
				return
			}
			if err == nil || !errors.Is(err, messages.ErrImplausible) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check(%v) = %v, want ErrImplausible naming %q", tc.sync, err, tc.want)
			}
		})
	}
}

func TestOffsetSyncTrailingBytes(t *testing.T) {
	s := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: "orders", Partition: 3}, UpstreamOffset: 1000, DownstreamOffset: 998}
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       int
	}{
		{"exact", s.Key(), s.Value(), 0},
		{"after the value", s.Key(), append(s.Value(), make([]byte, 1<<20)...), 1 << 20},
		{"after the key and the value", append(s.Key(), 1, 2), append(s.Value(), 3), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := messages.DecodeOffsetSync(tc.key, tc.value)
			if err != nil || got != s {
				t.Fatalf("DecodeOffsetSync = %v, %v; want %v (trailing bytes accepted as MM2 does)", got, err, s)
			}
			if n := got.TrailingBytes(tc.key, tc.value); n != tc.want {
				t.Errorf("TrailingBytes = %d, want %d", n, tc.want)
			}
		})
	}
}
