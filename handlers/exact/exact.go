package exact

import (
	"bytes"
	"fmt"

	"github.com/checkpointd/checkpointd/handlers/translate"
)

// Header is one record header, in the order the record carries it.
type Header struct {
	Key   string
	Value []byte // nil for a null header value
}

// Record is one data record as a fetch returns it, with the attributes of
// the batch it came in.
type Record struct {
	Offset    int64
	Timestamp int64  // milliseconds since the epoch
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value
	Headers   []Header

	// Transactional: the record's batch belongs to a transaction (committed
	// or aborted; a fetch with read_uncommitted returns both).
	Transactional bool
	// Control: the record is a transaction marker.
	Control bool
	// LogAppendTime: the broker stamped the batch's timestamp on append,
	// so Timestamp is not the producer's.
	LogAppendTime bool
}

// Same reports whether a and b are the same record content: timestamp, key,
// value and headers (names, values and order), telling null from empty.
// MirrorSourceTask copies all of them unchanged.
func Same(a, b *Record) bool {
	if a.Timestamp != b.Timestamp || !sameBytes(a.Key, b.Key) || !sameBytes(a.Value, b.Value) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !sameBytes(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// Query is what an exact translation of one committed offset looks at.
type Query struct {
	// Committed is the group's committed offset on the source partition:
	// the next record it would read.
	Committed int64
	// Lower is the sync MM2 translates Committed against (the newest stored
	// sync at or before it); Upper, when HasUpper, the oldest stored sync
	// after it (translate.Index.Bounds).
	Lower    translate.Sync
	Upper    translate.Sync
	HasUpper bool

	// Source holds the source partition's records from Lower.Upstream up
	// to (not including) the search's source bound, in offset order: the
	// upper sync's upstream offset, or SourceEnd without an upper sync
	// ([SourceBound]). SourceEnd is the partition's log end offset, read
	// after TargetEnd: then every target record below TargetEnd came from
	// a source record below SourceEnd.
	Source    []Record
	SourceEnd int64

	// Target holds the target partition's records from Lower.Downstream
	// on, in offset order; it may stop short (Result.More asks for the
	// rest). TargetRead is the offset the read reached (one past the last
	// offset it covered), TargetEnd the partition's log end offset.
	Target     []Record
	TargetRead int64
	TargetEnd  int64
}

// Result is the answer to a Query.
type Result struct {
	// Downstream is the exact target offset when Reason is ReasonNone, and
	// -1 otherwise: the caller keeps MM2's translation then.
	Downstream int64
	Reason     Reason
	// Detail says, for a person, what the reason rests on.
	Detail string
	// More: the target records given end before the search could decide;
	// read on from TargetRead and ask again.
	More bool
	// Matched is how many target records the search walked.
	Matched int
}

// Exact reports whether r is an exact target offset.
func (r Result) Exact() bool { return r.Reason == ReasonNone && !r.More }

// SourceBound is where the source records a search needs end (exclusive):
// the upper sync's upstream offset, else the source's end. Records after the
// committed one are needed to rule out an identical record further on, which
// the target could hold in the committed record's place were one filtered out.
func (q *Query) SourceBound() int64 {
	if q.HasUpper && q.Upper.Upstream < q.SourceEnd {
		return q.Upper.Upstream
	}
	return q.SourceEnd
}

// NeedsRecords reports whether translating committed against the lower sync
// needs any records: not when the sync names the committed record itself.
func NeedsRecords(committed int64, lower translate.Sync) bool { return committed != lower.Upstream }

func exact(downstream int64, matched int) Result {
	return Result{Downstream: downstream, Matched: matched}
}

func fallback(r Reason, format string, args ...any) Result {
	return Result{Downstream: -1, Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Locate finds the exact target offset for q.Committed, or says why the
// records cannot prove one.
//
// The source records from the lower sync to the committed offset are laid
// over the target records from the lower sync's target offset, in order:
// the first pair must be the same record (the sync says so), and each next
// target record must be either the next source record or a repeat of the
// last one matched (a producer retry). The record at the committed offset —
// or, for a group at the end of the source partition, the last record before
// it — is the anchor; where it first appears on the target is the answer
// (just after it, for the end case). Taking the next source record whenever
// it fits makes the walk reach the anchor at its earliest possible place.
// That alone is not proof when records may have been dropped on the way (a
// filter in the source connector) and retried: a dropped record identical to
// its successor, and a retry copy of the successor, look like no drop at all.
// So the answer stands only if the committed record is unlike every other
// source record in the window; then the first target record like it is its
// first copy (MM2 writes a partition's records in order), and no record the
// group has not read comes before it. For a group at the end of the source
// there is nothing unread to skip, and the answer is just after the first
// copy of the last record (a retry copy after it is a replay). Anything the
// walk cannot explain — a record filtered out, rewritten, compacted away,
// inside a transaction or stamped by the target broker — ends it with a
// fallback reason.
func Locate(q Query) Result {
	c, lo := q.Committed, q.Lower
	switch {
	case c < lo.Upstream:
		return fallback(ReasonNoSync, "committed offset %d is before the lower sync %d->%d", c, lo.Upstream, lo.Downstream)
	case q.HasUpper && (q.Upper.Upstream <= c || q.Upper.Downstream <= lo.Downstream):
		return fallback(ReasonInvalid, "upper sync %d->%d does not follow committed offset %d and lower sync %d->%d",
			q.Upper.Upstream, q.Upper.Downstream, c, lo.Upstream, lo.Downstream)
	case !NeedsRecords(c, lo):
		return exact(lo.Downstream, 0)
	}

	window, anchor, end, res, ok := sourceWindow(q)
	if !ok {
		return res
	}
	src := window[:anchor+1]

	limit := q.TargetEnd
	if q.HasUpper && q.Upper.Downstream < limit {
		limit = q.Upper.Downstream
	}
	i := -1 // index of the last source record matched
	next := lo.Downstream
	for j := range q.Target {
		t := &q.Target[j]
		if t.Offset < next {
			continue // before the search starts; a reader may return some
		}
		if t.Offset >= limit {
			break
		}
		switch {
		case t.Control || t.Transactional:
			return fallback(ReasonTransactional, "target offset %d is in a transaction", t.Offset)
		case t.LogAppendTime:
			return fallback(ReasonLogAppendTime, "target offset %d has the broker's append time, not the source timestamp", t.Offset)
		case t.Offset != next:
			if i < 0 {
				return fallback(ReasonTopicRecreated, "the lower sync's target offset %d is gone (the target starts at %d)", next, t.Offset)
			}
			return fallback(ReasonCompacted, "target offsets %d to %d are missing (compacted or deleted)", next, t.Offset-1)
		}
		next++
		switch {
		case i < 0:
			if !Same(t, &src[0]) {
				return fallback(ReasonTopicRecreated, "the lower sync's records differ: source %d, target %d", src[0].Offset, t.Offset)
			}
			i = 0
		case i+1 < len(src) && Same(t, &src[i+1]):
			i++
		case Same(t, &src[i]):
			// A second copy of the record just matched: a producer retry.
			continue
		default:
			return fallback(ReasonNotFound, "target offset %d is not source offset %d or a copy of %d: filtered out or transformed", t.Offset, src[min(i+1, len(src)-1)].Offset, src[i].Offset)
		}
		if i == anchor {
			if end {
				return exact(t.Offset+1, j+1)
			}
			// A record filtered out before this one, with a retry copy after
			// it, would look the same as no filtering were the committed
			// record identical to another in the window; none is.
			for k := range window {
				if k != anchor && Same(&window[k], &src[anchor]) {
					return fallback(ReasonAmbiguous, "source offset %d is identical to the committed record %d", window[k].Offset, c)
				}
			}
			return exact(t.Offset, j+1)
		}
	}
	if q.TargetRead < limit && next < limit {
		return Result{Downstream: -1, More: true, Matched: len(q.Target)}
	}
	if i >= 0 && !q.HasUpper {
		return fallback(ReasonNotReplicatedYet, "the target ends at %d before source offset %d arrived", q.TargetEnd, src[anchor].Offset)
	}
	if i < 0 {
		return fallback(ReasonTopicRecreated, "no target record at the lower sync's offset %d (the target ends at %d)", lo.Downstream, q.TargetEnd)
	}
	return fallback(ReasonNotFound, "source offset %d is not on the target before the upper sync's offset %d", src[anchor].Offset, limit)
}

// sourceWindow checks the source records and finds the anchor: the index of
// the committed record, or of the last record before it when the group is at
// the end of the partition (end). ok is false with the fallback when the
// source cannot be used.
func sourceWindow(q Query) (window []Record, anchor int, end bool, res Result, ok bool) {
	c, lo := q.Committed, q.Lower
	if len(q.Source) == 0 || q.Source[0].Offset != lo.Upstream {
		switch {
		case q.SourceEnd <= lo.Upstream:
			return nil, 0, false, fallback(ReasonTopicRecreated, "the source ends at %d, before the lower sync's offset %d", q.SourceEnd, lo.Upstream), false
		default:
			return nil, 0, false, fallback(ReasonCompacted, "source offset %d of the lower sync is missing (compacted or deleted)", lo.Upstream), false
		}
	}
	if q.SourceEnd < c {
		return nil, 0, false, fallback(ReasonTopicRecreated, "committed offset %d is past the source's end %d", c, q.SourceEnd), false
	}
	bound := q.SourceBound()
	anchor = -1
	for k := range q.Source {
		s := &q.Source[k]
		if s.Offset >= bound {
			break // a read returns whole batches
		}
		switch {
		case s.Offset != lo.Upstream+int64(k):
			return nil, 0, false, fallback(ReasonCompacted, "source offsets %d to %d are missing (compacted or deleted)", lo.Upstream+int64(k), s.Offset-1), false
		case s.Control || s.Transactional:
			return nil, 0, false, fallback(ReasonTransactional, "source offset %d is in a transaction", s.Offset), false
		}
		if s.Offset == c {
			anchor = k
		}
		window = q.Source[:k+1]
	}
	next := lo.Upstream + int64(len(window))
	switch {
	case next < bound:
		return nil, 0, false, fallback(ReasonCompacted, "source offsets %d to %d are missing (compacted or deleted)", next, bound-1), false
	case anchor >= 0:
		return window, anchor, false, Result{}, true
	default: // c == SourceEnd: the group is at the end
		return window, int(c - 1 - lo.Upstream), true, Result{}, true
	}
}
