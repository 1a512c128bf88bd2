package exact

import (
	"testing"

	"github.com/checkpointd/checkpointd/handlers/translate"
)

// mirrored is a source partition and the target partition a simulated
// replication made of it, with the source offset each target record came
// from (-1 for a record that came from elsewhere).
type mirrored struct {
	source, target []Record
	origin         []int64
	firstCopy      map[int64]int64 // source offset -> target offset of its first copy
	dropped, duped bool
	foreign        bool
}

// replicate builds a target from source, driven by ops: each source record
// is copied, copied twice (a producer retry), dropped (filtered) or copied
// after a record of another origin.
func replicate(source []Record, ops []byte) mirrored {
	m := mirrored{source: source, firstCopy: map[int64]int64{}}
	add := func(r Record, origin int64) {
		r.Offset = int64(len(m.target))
		m.target = append(m.target, r)
		m.origin = append(m.origin, origin)
		if _, ok := m.firstCopy[origin]; !ok && origin >= 0 {
			m.firstCopy[origin] = r.Offset
		}
	}
	for i, r := range source {
		op := byte(0)
		if i < len(ops) {
			op = ops[i] % 8 // mostly plain copies
		}
		switch op {
		case 5:
			add(r, r.Offset)
			add(r, r.Offset)
			m.duped = true
		case 6:
			m.dropped = true
		case 7:
			add(Record{Timestamp: -1, Value: []byte{'Z', byte(i)}}, -1)
			add(r, r.Offset)
			m.foreign = true
		default:
			add(r, r.Offset)
		}
	}
	return m
}

// FuzzLocateNeverSkips lays random sources over simulated targets and checks
// that an exact answer never lets a consumer skip a record it has not read:
// no target record before the answer comes from the committed offset or
// later. Over a clean copy the answer must be exact and exactly right.
func FuzzLocateNeverSkips(f *testing.F) {
	f.Add([]byte{12, 3, 2, 0, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{0, 5, 0, 0, 6, 0, 7, 0})
	f.Add([]byte{30, 1, 0, 4, 20, 1, 0, 0, 0, 0, 0, 0}, []byte{})
	f.Add([]byte{8, 2, 1, 2, 8, 0, 1, 1, 1, 1, 1, 1, 1, 1}, []byte{5, 5, 5, 5, 5, 5, 5, 5})
	f.Fuzz(func(t *testing.T, shape, ops []byte) {
		if len(shape) < 6 {
			return
		}
		n := int(shape[0])%40 + 1
		alphabet := int(shape[1])%4 + 1
		contents := shape[6:]
		source := make([]Record, n)
		for i := range source {
			c := byte(0)
			if i < len(contents) {
				c = contents[i] % byte(alphabet)
			}
			source[i] = Record{Offset: int64(i), Timestamp: int64(c), Key: []byte{c}, Value: []byte{c}}
		}
		m := replicate(source, ops)

		// A lower sync names a replicated record at or before the commit,
		// an upper sync one after it, each at its first copy.
		u := int64(shape[2]) % int64(n)
		lowDown, ok := m.firstCopy[u]
		if !ok {
			return
		}
		c := u + int64(shape[3])%(int64(n)-u+1) // up to n: the end of the source
		q := Query{Committed: c, Lower: translate.Sync{Upstream: u, Downstream: lowDown},
			SourceEnd: int64(n),
			Target:    m.target, TargetRead: int64(len(m.target)), TargetEnd: int64(len(m.target))}
		if shape[5]%2 == 1 {
			for v := c + 1 + int64(shape[4])%4; v < int64(n); v++ {
				if d, ok := m.firstCopy[v]; ok && d > lowDown {
					q.Upper, q.HasUpper = translate.Sync{Upstream: v, Downstream: d}, true
					break
				}
			}
		}

		q.Source = source[u:q.SourceBound()]
		got := Locate(q)
		if got.More {
			t.Fatalf("asked for more with the whole target given: %+v", got)
		}
		// truth: the first target offset from the lower sync on whose record
		// the group has not read (source offset >= c), or the target's end.
		truth := int64(len(m.target))
		for p := lowDown; p < int64(len(m.target)); p++ {
			if m.origin[p] >= c {
				truth = p
				break
			}
		}
		if !got.Exact() {
			if got.Downstream != -1 {
				t.Fatalf("fallback with an offset: %+v", got)
			}
			if !m.dropped && !m.foreign && !m.duped && got.Reason != ReasonAmbiguous {
				t.Fatalf("clean copy fell back: %+v (truth %d)", got, truth)
			}
			return
		}
		if got.Downstream > truth {
			t.Fatalf("skip: answer %d past the first unread record at %d (commit %d, lower %+v, upper %+v/%v, origins %v)",
				got.Downstream, truth, c, q.Lower, q.Upper, q.HasUpper, m.origin)
		}
		if got.Downstream < lowDown {
			t.Fatalf("answer %d before the lower sync's %d", got.Downstream, lowDown)
		}
		if !m.dropped && !m.foreign && !m.duped && got.Downstream != truth {
			t.Fatalf("clean copy: answer %d, truth %d (commit %d, lower %+v)", got.Downstream, truth, c, q.Lower)
		}
	})
}
