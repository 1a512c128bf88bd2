package targetgroups

import (
	"maps"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

func TestTopicCache(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name       string
		partitions []int32 // nil: stored as missing
		at         time.Duration
		wantHit    bool
		want       map[messages.TopicPartition]bool
	}{
		{name: "topic within its ttl", partitions: []int32{0, 1}, at: 29 * time.Second, wantHit: true,
			want: map[messages.TopicPartition]bool{{Topic: "t", Partition: 0}: true, {Topic: "t", Partition: 1}: true}},
		{name: "topic after its ttl", partitions: []int32{0, 1}, at: 30 * time.Second},
		{name: "missing topic within the missing ttl", at: 4 * time.Second, wantHit: true, want: map[messages.TopicPartition]bool{}},
		{name: "missing topic asked again soon", at: 5 * time.Second},
		{name: "topic without partitions is not missing", partitions: []int32{}, at: 10 * time.Second, wantHit: true,
			want: map[messages.TopicPartition]bool{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTopicCache(30*time.Second, 5*time.Second)
			c.store("t", tc.partitions, t0)
			out := map[messages.TopicPartition]bool{}
			todo := c.lookup([]string{"t", "never-seen"}, t0.Add(tc.at), out)
			wantTodo := []string{"never-seen"}
			if !tc.wantHit {
				wantTodo = []string{"t", "never-seen"}
			}
			if len(todo) != len(wantTodo) || todo[0] != wantTodo[0] {
				t.Fatalf("to describe %v, want %v", todo, wantTodo)
			}
			if tc.wantHit && !maps.Equal(out, tc.want) {
				t.Errorf("from the cache %v, want %v", out, tc.want)
			}
		})
	}
}

func TestTopicCacheOff(t *testing.T) {
	c := newTopicCache(0, 0)
	c.store("t", []int32{0}, time.Unix(1, 0))
	c.store("gone", nil, time.Unix(1, 0))
	if todo := c.lookup([]string{"t", "gone"}, time.Unix(1, 0), map[messages.TopicPartition]bool{}); len(todo) != 2 {
		t.Errorf("a cache with no ttl answered: to describe %v", todo)
	}
}
