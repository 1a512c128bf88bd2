package translate

// Reason says why no checkpoint was produced. The zero value, ReasonNone, means
// there is nothing to explain. String gives the stable snake_case code used in
// metric labels, logs and `checkpointd translate --explain`.
type Reason uint8

const (
	ReasonNone Reason = iota
	// ReasonNoSyncYet: the index holds no offset sync for the partition, e.g. the
	// topic is not mirrored or nothing was replicated yet (MM2's empty result).
	ReasonNoSyncYet
	// ReasonBehindOldestSync: the committed offset is older than the oldest sync
	// kept for the partition (MM2's −1).
	ReasonBehindOldestSync
	// ReasonFilteredTopic: the topic filter excludes the upstream topic.
	ReasonFilteredTopic
	// ReasonNoCommit: the group has no committed offset for the partition
	// (Kafka reports a negative committed offset as absent).
	ReasonNoCommit
	// ReasonNotNewer: the checkpoint would repeat the last one or move the target
	// offset backwards without the source group having rewound.
	ReasonNotNewer
	// ReasonGateClosed: the offset-sync topic has not yet been read to the end
	// offsets seen at start, so every translation is withheld.
	ReasonGateClosed
)

// String returns the reason's code, or "none" for ReasonNone.
func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return "none"
	case ReasonNoSyncYet:
		return "no_sync_yet"
	case ReasonBehindOldestSync:
		return "behind_oldest_sync"
	case ReasonFilteredTopic:
		return "filtered_topic"
	case ReasonNoCommit:
		return "no_commit"
	case ReasonNotNewer:
		return "not_newer"
	case ReasonGateClosed:
		return "gate_closed"
	default:
		return "unknown"
	}
}

// MarshalText encodes the reason as its code, so it reads well in JSON.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
