package demo

// syncTrigger is MM2's per-partition state in MirrorSourceTask's
// PartitionState: it decides whether a mirrored record must produce an offset
// sync right away. The zero value is not ready; use newSyncTrigger.
type syncTrigger struct {
	lagMax    int64
	prevU     int64
	prevD     int64
	lastSyncD int64
}

func newSyncTrigger(lagMax int64) syncTrigger {
	return syncTrigger{lagMax: lagMax, prevU: -1, prevD: -1, lastSyncD: -1}
}

// update records that upstream offset u was written at downstream offset d
// and reports whether that must be synced now: the partition's first record,
// the downstream moved offset.lag.max past the last sync, an upstream gap, or
// a truncated downstream (MM2 3.5+ rules).
func (s *syncTrigger) update(u, d int64) bool {
	fire := s.lastSyncD == -1 ||
		d-(s.lastSyncD+1) >= s.lagMax ||
		u-s.prevU != 1 ||
		d < s.prevD
	if fire {
		s.lastSyncD = d
	}
	s.prevU, s.prevD = u, d
	return fire
}
