package messages

import "testing"

// Vectors from Java: s.hashCode() and Utils.abs(s.hashCode()) % 50.
func TestGroupPartition(t *testing.T) {
	for _, tc := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"", 50, 0},
		{"a", 50, 47},
		{"hello", 50, 22},
		{"checkpointd-group-1", 50, 2},
		{"tk-abc-g7", 50, 41}, // negative hash
		{"grüße", 50, 23},
		{"日本語", 50, 43},
		{"😀x", 50, 39},                // a surrogate pair
		{"polygenelubricants", 50, 0}, // hash is Integer.MIN_VALUE
		{"DESIGNING WORKHOUSES", 50, 0},
		{"hello", 1, 0},
		{"hello", 0, 0},
	} {
		if got := GroupPartition(tc.group, tc.n); got != tc.want {
			t.Errorf("GroupPartition(%q, %d) = %d, want %d", tc.group, tc.n, got, tc.want)
		}
	}
}

func FuzzGroupPartition(f *testing.F) {
	f.Add("hello", int32(50))
	f.Fuzz(func(t *testing.T, group string, n int32) {
		p := GroupPartition(group, n)
		if p < 0 || (n > 0 && p >= n) {
			t.Fatalf("GroupPartition(%q, %d) = %d, out of range", group, n, p)
		}
	})
}

func TestGroupPartitionOfKeyMatchesGroupPartition(t *testing.T) {
	for _, g := range []string{"", "a", "tk-abc-g7", "grüße", "日本語", "😀x", "polygenelubricants"} {
		key := Checkpoint{Group: g, TopicPartition: TopicPartition{Topic: "t", Partition: 3}}.Key()
		got, ok := GroupPartitionOfKey(key, 50)
		if want := GroupPartition(g, 50); !ok || got != want {
			t.Errorf("GroupPartitionOfKey(key of %q) = %d, %v; want %d", g, got, ok, want)
		}
	}
	for _, key := range [][]byte{nil, {0}, {0, 5, 'a'}, {0x80, 0}} {
		if _, ok := GroupPartitionOfKey(key, 50); ok {
			t.Errorf("GroupPartitionOfKey(%x) accepted a key that names no group", key)
		}
	}
}

func FuzzGroupPartitionOfKey(f *testing.F) {
	f.Add("grüße", int32(50))
	f.Fuzz(func(t *testing.T, group string, n int32) {
		if len(group) > MaxStringLength || n <= 0 {
			return
		}
		key := Checkpoint{Group: group, TopicPartition: TopicPartition{Topic: "t"}}.Key()
		got, ok := GroupPartitionOfKey(key, n)
		if want := GroupPartition(group, n); !ok || got != want {
			t.Fatalf("GroupPartitionOfKey(key of %q, %d) = %d, %v; want %d", group, n, got, ok, want)
		}
	})
}
