package demo

import (
	"slices"
	"testing"
)

func TestSyncTriggerFiresLikeMM2(t *testing.T) {
	tests := []struct {
		name   string
		lagMax int64
		ud     [][2]int64
		want   []int64 // downstream offsets that fire
	}{
		{
			name:   "dense stream fires every lag+1 records",
			lagMax: 10,
			ud:     dense(0, 0, 30),
			want:   []int64{0, 11, 22},
		},
		{
			name:   "lag 0 fires on every record",
			lagMax: 0,
			ud:     dense(5, 0, 3),
			want:   []int64{0, 1, 2},
		},
		{
			name:   "upstream gap fires",
			lagMax: 100,
			ud:     [][2]int64{{0, 0}, {1, 1}, {3, 2}, {4, 3}},
			want:   []int64{0, 2},
		},
		{
			name:   "truncated downstream fires",
			lagMax: 100,
			ud:     [][2]int64{{0, 10}, {1, 11}, {2, 3}, {3, 4}},
			want:   []int64{10, 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncTrigger(tt.lagMax)
			var got []int64
			for _, r := range tt.ud {
				if s.update(r[0], r[1]) {
					got = append(got, r[1])
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("fired at %v, want %v", got, tt.want)
			}
		})
	}
}

// dense is n records with consecutive offsets from (u, d).
func dense(u, d int64, n int) [][2]int64 {
	out := make([][2]int64, n)
	for i := range out {
		out[i] = [2]int64{u + int64(i), d + int64(i)}
	}
	return out
}
