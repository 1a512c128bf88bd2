package translate

import "github.com/checkpointd/checkpointd/messages"

// Bounds is Translate with the stored sync after upstream as well: the
// oldest sync whose upstream offset is past upstream, when there is one. The
// record at upstream, if it reached the target, sits before that sync's
// downstream offset, so the two syncs bracket where an exact search looks.
// Both answers come from one snapshot of the partition's history.
func (ix *Index) Bounds(tp messages.TopicPartition, upstream int64) (t Translation, upper Sync, hasUpper bool) {
	if !ix.gate.Load() {
		return Translation{Outcome: NoResult, Downstream: -1, Reason: ReasonGateClosed}, Sync{}, false
	}
	e := ix.parts.Load().find(tp)
	if e == nil {
		return Translation{Outcome: NoResult, Downstream: -1, Reason: ReasonNoSyncYet}, Sync{}, false
	}
	h := e.load()
	t = translateWith(h.find(upstream), upstream)
	if t.Outcome != Translated {
		return t, Sync{}, false
	}
	for _, s := range h.syncs() {
		if s.Upstream > upstream && (!hasUpper || s.Upstream < upper.Upstream) {
			upper, hasUpper = s, true
		}
	}
	return t, upper, hasUpper
}
