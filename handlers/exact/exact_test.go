package exact

import (
	"testing"

	"github.com/checkpointd/checkpointd/handlers/translate"
)

// recs builds records from letters, one per record, at offsets from first
// on: the letter is the value, and the timestamp follows it, so equal letters
// are equal records. '.' leaves a gap (no record at that offset).
func recs(first int64, letters string) []Record {
	var out []Record
	for i, l := range letters {
		if l == '.' {
			continue
		}
		out = append(out, Record{Offset: first + int64(i), Timestamp: 1_700_000_000_000 + int64(l), Key: []byte("k"), Value: []byte{byte(l)}})
	}
	return out
}

// with returns rs with f applied to the record at offset off.
func with(rs []Record, off int64, f func(*Record)) []Record {
	out := append([]Record(nil), rs...)
	for i := range out {
		if out[i].Offset == off {
			f(&out[i])
		}
	}
	return out
}

func TestLocate(t *testing.T) {
	lo := translate.Sync{Upstream: 100, Downstream: 500}
	up := translate.Sync{Upstream: 110, Downstream: 512}
	// query: the source from 100, the target from 500, read to its end.
	query := func(c int64, src []Record, srcEnd int64, tgt []Record, tgtEnd int64, hasUpper bool) Query {
		return Query{Committed: c, Lower: lo, Upper: up, HasUpper: hasUpper,
			Source: src, SourceEnd: srcEnd, Target: tgt, TargetRead: tgtEnd, TargetEnd: tgtEnd}
	}
	const src, tgt = "abcdefghij", "abcdefghijkl" // 100-109 and 500-511: a clean copy up to the upper sync
	tests := []struct {
		name   string
		q      Query
		want   int64 // the exact offset, or -1
		reason Reason
		more   bool
	}{
		{"clean copy, committed mid-way", query(104, recs(100, src), 120, recs(500, tgt), 520, true), 504, ReasonNone, false},
		{"committed at the lower sync needs no records", query(100, nil, 120, nil, 520, true), 500, ReasonNone, false},
		{"no upper sync: the source read to its end", query(104, recs(100, "abcdefg"), 107, recs(500, "abcdefg"), 507, false), 504, ReasonNone, false},
		{"group at the end of the source", query(105, recs(100, "abcde"), 105, recs(500, "abcde"), 505, false), 505, ReasonNone, false},
		{"group at the end, one past the sync", query(101, recs(100, "a"), 101, recs(500, "a"), 501, false), 501, ReasonNone, false},
		{"retry copies before the record", query(103, recs(100, src), 120, recs(500, "abbb"+tgt[2:]), 520, true), 505, ReasonNone, false},
		{"retry copy of the committed record: its first copy", query(102, recs(100, src), 120, recs(500, "abcc"+tgt[3:]), 520, true), 502, ReasonNone, false},
		{"identical neighbours: ambiguous", query(102, recs(100, "xaabcdefgh"), 120, recs(500, "xaaabcdefgh"), 520, true), -1, ReasonAmbiguous, false},
		{"identical neighbours at the end: the first copy", query(103, recs(100, "xaa"), 103, recs(500, "xaaa"), 504, false), 503, ReasonNone, false},
		{"caught-up group, the end record retried", query(103, recs(100, "abc"), 103, recs(500, "abcc"), 504, false), 503, ReasonNone, false},
		{"committed record repeated later: ambiguous", query(104, recs(100, "abcdefehij"), 120, recs(500, "abcdefehijkl"), 520, true), -1, ReasonAmbiguous, false},
		{"record filtered out", query(104, recs(100, src), 120, recs(500, "abdefghij"), 520, true), -1, ReasonNotFound, false},
		{"not replicated yet", query(104, recs(100, src), 110, recs(500, "abc"), 503, false), -1, ReasonNotReplicatedYet, false},
		{"target ends before the upper sync's offset", query(104, recs(100, src), 120, recs(500, "abc"), 503, true), -1, ReasonNotFound, false},
		{"target read stopped early", Query{Committed: 104, Lower: lo, Upper: up, HasUpper: true, Source: recs(100, src), SourceEnd: 120,
			Target: recs(500, "ab"), TargetRead: 502, TargetEnd: 520}, -1, ReasonNone, true},
		{"source compacted before the record", query(104, recs(100, "ab.defghij"), 120, recs(500, "abdefghij"), 520, true), -1, ReasonCompacted, false},
		{"source record at the sync compacted", query(104, recs(100, ".bcdefghij"), 120, recs(500, tgt), 520, true), -1, ReasonCompacted, false},
		{"committed record compacted", query(104, recs(100, "abcd.fghij"), 120, recs(500, tgt), 520, true), -1, ReasonCompacted, false},
		{"record after the commit compacted", query(104, recs(100, "abcdef.hij"), 120, recs(500, tgt), 520, true), -1, ReasonCompacted, false},
		{"target compacted", query(104, recs(100, src), 120, recs(500, "ab.defghijkl"), 520, true), -1, ReasonCompacted, false},
		{"transactional source", query(104, with(recs(100, src), 102, func(r *Record) { r.Transactional = true }), 120, recs(500, tgt), 520, true), -1, ReasonTransactional, false},
		{"transaction marker on the target", query(104, recs(100, src), 120, with(recs(500, tgt), 501, func(r *Record) { r.Control = true }), 520, true), -1, ReasonTransactional, false},
		{"target stamps append time", query(104, recs(100, src), 120, with(recs(500, tgt), 500, func(r *Record) { r.LogAppendTime = true }), 520, true), -1, ReasonLogAppendTime, false},
		{"sync record differs: re-created", query(104, recs(100, src), 120, recs(500, "z"+tgt[1:]), 520, true), -1, ReasonTopicRecreated, false},
		{"source ends before the sync: re-created", query(104, nil, 3, recs(500, tgt), 520, true), -1, ReasonTopicRecreated, false},
		{"committed past the source end: re-created", query(104, recs(100, "abc"), 103, recs(500, tgt), 520, false), -1, ReasonTopicRecreated, false},
		{"target starts after the sync: re-created", query(104, recs(100, src), 120, recs(502, tgt[2:]), 520, true), -1, ReasonTopicRecreated, false},
		{"timestamp differs", query(104, recs(100, src), 120, with(recs(500, tgt), 502, func(r *Record) { r.Timestamp++ }), 520, true), -1, ReasonNotFound, false},
		{"null key against empty key", query(102, recs(100, src), 120, with(recs(500, tgt), 501, func(r *Record) { r.Key = []byte{} }), 520, true), -1, ReasonNotFound, false},
		{"header order differs", query(102,
			with(recs(100, src), 101, func(r *Record) { r.Headers = []Header{{"h1", []byte("1")}, {"h2", nil}} }), 120,
			with(recs(500, tgt), 501, func(r *Record) { r.Headers = []Header{{"h2", nil}, {"h1", []byte("1")}} }), 520, true), -1, ReasonNotFound, false},
		{"same headers match", query(102,
			with(recs(100, src), 101, func(r *Record) { r.Headers = []Header{{"h1", []byte("1")}, {"h2", nil}} }), 120,
			with(recs(500, tgt), 501, func(r *Record) { r.Headers = []Header{{"h1", []byte("1")}, {"h2", nil}} }), 520, true), 502, ReasonNone, false},
		{"committed before the lower sync", query(99, recs(100, src), 120, recs(500, tgt), 520, true), -1, ReasonNoSync, false},
		{"upper sync not after the commit", Query{Committed: 104, Lower: lo, Upper: translate.Sync{Upstream: 104, Downstream: 504}, HasUpper: true}, -1, ReasonInvalid, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Locate(tc.q)
			if got.Downstream != tc.want || got.Reason != tc.reason || got.More != tc.more {
				t.Fatalf("Locate = %+v; want downstream %d, reason %q, more %v", got, tc.want, tc.reason, tc.more)
			}
			if got.Exact() != (tc.reason == ReasonNone && !tc.more) {
				t.Fatalf("Exact() = %v for %+v", got.Exact(), got)
			}
			if got.Reason != ReasonNone && got.Detail == "" {
				t.Fatalf("fallback %q without a detail", got.Reason)
			}
		})
	}
}

// TestLocateUpperBound checks that the search stops at the upper sync: a
// copy of the record past it is not the group's position.
func TestLocateUpperBound(t *testing.T) {
	q := Query{Committed: 102, Lower: translate.Sync{Upstream: 100, Downstream: 500},
		Upper: translate.Sync{Upstream: 103, Downstream: 502}, HasUpper: true,
		Source: recs(100, "abc"), SourceEnd: 110, Target: recs(500, "abcd"), TargetRead: 504, TargetEnd: 504}
	// The upper sync claims 103 is at 502, so c's copy must be before it;
	// the copy at 502 contradicts the sync.
	if got := Locate(q); got.Reason != ReasonNotFound {
		t.Fatalf("Locate = %+v; want not_found", got)
	}
}
