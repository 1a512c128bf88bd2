package translate

// Sync is one offset sync: the upstream record at Upstream was written to the
// target at Downstream.
type Sync struct {
	Upstream   int64
	Downstream int64
}

// Outcome is the kind of answer a translation gives: OffsetSyncStore's
// translateDownstream answers empty, −1 or an offset.
type Outcome uint8

const (
	// NoResult: nothing can be said, because the gate is closed or the partition
	// has no sync (MM2's empty OptionalLong).
	NoResult Outcome = iota
	// BehindOldestSync: the offset is older than every stored sync (MM2's −1).
	BehindOldestSync
	// Translated: Downstream holds the translated target offset.
	Translated
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case NoResult:
		return "no_result"
	case BehindOldestSync:
		return "behind_oldest_sync"
	case Translated:
		return "translated"
	default:
		return "unknown"
	}
}

// Translation is the answer for one upstream offset.
type Translation struct {
	Outcome Outcome
	// Downstream is the target offset when Outcome is Translated, and −1 otherwise,
	// so a caller that ignores Outcome still never sees a usable offset.
	Downstream int64
	// Reason explains a result other than Translated.
	Reason Reason
	// Sync is the sync the answer rests on: the one used for Translated, the
	// oldest stored one for BehindOldestSync, zero for NoResult.
	Sync Sync
}

// translateWith applies MM2's +1 rule: an offset exactly at a sync maps to the
// sync's target offset; one past it maps just after, because nothing is known
// about how many of the records in between reached the target.
func translateWith(s Sync, upstream int64) Translation {
	switch {
	case s.Upstream > upstream:
		return Translation{Outcome: BehindOldestSync, Downstream: -1, Reason: ReasonBehindOldestSync, Sync: s}
	case s.Upstream == upstream:
		return Translation{Outcome: Translated, Downstream: s.Downstream, Sync: s}
	default:
		return Translation{Outcome: Translated, Downstream: s.Downstream + 1, Sync: s}
	}
}
