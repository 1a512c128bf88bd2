package exact

// Reason says why an exact translation fell back to MM2's rule. The zero
// value, ReasonNone, means the result is exact. The strings are stable codes
// for metric labels, logs and `checkpointd translate --explain`.
type Reason string

const (
	ReasonNone Reason = ""
	// ReasonNoSync: MM2's rule has no translation to refine (no sync, or
	// the committed offset is behind the oldest one).
	ReasonNoSync Reason = "no_sync"
	// ReasonNoCommit: the group has no committed offset on the source
	// partition now.
	ReasonNoCommit Reason = "no_commit"
	// ReasonNotReplicatedYet: the target ends before the record the
	// translation needs.
	ReasonNotReplicatedYet Reason = "not_replicated_yet"
	// ReasonNotFound: the records between the syncs differ on the target:
	// filtered out by the source connector or transformed on the way.
	ReasonNotFound Reason = "not_found"
	// ReasonAmbiguous: another source record between the syncs is
	// identical to the committed one, so the target's copies cannot tell
	// them apart.
	ReasonAmbiguous Reason = "ambiguous"
	// ReasonCompacted: records the search needs are missing on either side
	// (compaction, or retention deleting them).
	ReasonCompacted Reason = "compacted"
	// ReasonTransactional: transaction markers or transactional (possibly
	// aborted) records in the range.
	ReasonTransactional Reason = "transactional"
	// ReasonLogAppendTime: the target topic stamps its own timestamps, so
	// records cannot be compared.
	ReasonLogAppendTime Reason = "log_append_time"
	// ReasonTopicRecreated: the record a sync names is not the same (or no
	// longer exists) on the two clusters, as after a topic was re-created.
	ReasonTopicRecreated Reason = "topic_recreated"
	// ReasonReadDenied: no READ permission on the source or target topic.
	ReasonReadDenied Reason = "read_denied"
	// ReasonBudgetExceeded: the records needed exceed the fetch budget.
	ReasonBudgetExceeded Reason = "budget_exceeded"
	// ReasonFetchFailed: reading the records failed for another reason.
	ReasonFetchFailed Reason = "fetch_failed"
	// ReasonInvalid: the query contradicts itself (a caller's bug).
	ReasonInvalid Reason = "invalid_query"
)

// String returns the reason's code, "exact" for ReasonNone.
func (r Reason) String() string {
	if r == ReasonNone {
		return "exact"
	}
	return string(r)
}
