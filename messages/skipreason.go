package messages

// SkipReason says why a (group, partition) gave no checkpoint. The zero
// value, SkipNone, means there is nothing to explain. String gives the stable
// snake_case code used in metric labels, logs, events and `checkpointd
// translate --explain`.
//
// It lives here rather than beside the rule that produces it
// (handlers/translate, which aliases it) so that adapters and users' event
// handlers can name it without importing the core.
type SkipReason uint8

const (
	SkipNone SkipReason = iota
	// SkipNoSyncYet: the index holds no offset sync for the partition, e.g.
	// the topic is not mirrored or nothing was replicated yet (MM2's empty
	// result).
	SkipNoSyncYet
	// SkipBehindOldestSync: the committed offset is older than the oldest
	// sync kept for the partition (MM2's −1).
	SkipBehindOldestSync
	// SkipFilteredTopic: the topic filter excludes the upstream topic.
	SkipFilteredTopic
	// SkipNoCommit: the group has no committed offset for the partition
	// (Kafka reports a negative committed offset as absent).
	SkipNoCommit
	// SkipNotNewer: the checkpoint would repeat the last one or move the
	// target offset backwards without the source group having rewound.
	SkipNotNewer
	// SkipGateClosed: the offset-sync topic has not yet been read to the
	// end offsets seen at start, so every translation is withheld.
	SkipGateClosed
	// SkipVetoed: a checkpoint policy (pipeline.WithCheckpointPolicy)
	// refused the checkpoint.
	SkipVetoed
)

// String returns the reason's code, or "none" for SkipNone.
func (r SkipReason) String() string {
	switch r {
	case SkipNone:
		return "none"
	case SkipNoSyncYet:
		return "no_sync_yet"
	case SkipBehindOldestSync:
		return "behind_oldest_sync"
	case SkipFilteredTopic:
		return "filtered_topic"
	case SkipNoCommit:
		return "no_commit"
	case SkipNotNewer:
		return "not_newer"
	case SkipGateClosed:
		return "gate_closed"
	case SkipVetoed:
		return "vetoed"
	default:
		return "unknown"
	}
}

// SkipReasons lists every reason but SkipNone, for pre-registering metric
// label values and for tests.
func SkipReasons() []SkipReason {
	return []SkipReason{SkipNoSyncYet, SkipBehindOldestSync, SkipFilteredTopic, SkipNoCommit, SkipNotNewer, SkipGateClosed, SkipVetoed}
}

// MarshalText encodes the reason as its code, so it reads well in JSON.
func (r SkipReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a code back; an unknown code is an error.
func (r *SkipReason) UnmarshalText(b []byte) error {
	if string(b) == "none" {
		*r = SkipNone
		return nil
	}
	for _, c := range SkipReasons() {
		if c.String() == string(b) {
			*r = c
			return nil
		}
	}
	return &UnknownSkipReasonError{Code: string(b)}
}

// UnknownSkipReasonError is a skip reason code this version does not know.
type UnknownSkipReasonError struct{ Code string }

func (e *UnknownSkipReasonError) Error() string { return "unknown skip reason " + e.Code }
