package targetgroup

// Reason says what became of one (group, partition) in a sync round. The
// values are stable: they label metrics and appear in logs.
type Reason string

const (
	// Committed: the translated offset was written to the target group.
	Committed Reason = "committed"
	// ActiveOnTarget: the target group has members or is rebalancing, so it
	// is left alone this round (the broker answers UNKNOWN_MEMBER_ID too).
	ActiveOnTarget Reason = "active_on_target"
	// TargetAhead: the target group is already at the translated offset,
	// or past it with following source rewinds off (MM2's rule: a target
	// group is never rewound).
	TargetAhead Reason = "target_ahead"
	// TargetAheadMovedByConsumer: the target group is past the translated
	// offset, and its offset is not the one checkpointd last committed
	// there: a consumer (or a tool) moved it, so it is left alone.
	TargetAheadMovedByConsumer Reason = "target_ahead_moved_by_consumer"
	// TargetAheadNotOurs: the target group is past the translated offset,
	// and checkpointd has no record of committing there (MM2 or another
	// tool did, or the record was lost), so it is left alone.
	TargetAheadNotOurs Reason = "target_ahead_not_ours"
	// Rewound: the source group went back (reset, or deleted and
	// re-created lower) and the idle target group, still at the offset
	// checkpointd last committed, was moved back with it.
	Rewound Reason = "rewound"
	// TargetTopicMissing: the partition does not exist on the target.
	TargetTopicMissing Reason = "target_topic_missing"
	// Unauthorized: the principal lacks an ACL on the group or the topic.
	Unauthorized Reason = "unauthorized"
	// MetadataTooLarge: the commit metadata is over the target broker's
	// offset.metadata.max.bytes.
	MetadataTooLarge Reason = "metadata_too_large"
	// Retriable: a transient coordinator or network error; try again later.
	Retriable Reason = "retriable"
	// DescribeFailed: the target group could not be described, so whether it
	// is safe to write is unknown; try again later.
	DescribeFailed Reason = "describe_failed"
	// InvalidCheckpoint: the checkpoint's downstream offset is negative and
	// there is nothing meaningful to commit. MM2 never writes one.
	InvalidCheckpoint Reason = "invalid_checkpoint"
	// CommitFailed: the broker refused the commit for a reason not listed
	// above; the error is logged with it.
	CommitFailed Reason = "commit_failed"
)

func (r Reason) String() string { return string(r) }

// Reasons lists every reason, for pre-registering metric label values.
func Reasons() []Reason {
	return []Reason{Committed, Rewound, ActiveOnTarget, TargetAhead, TargetAheadMovedByConsumer, TargetAheadNotOurs,
		TargetTopicMissing, Unauthorized, MetadataTooLarge, Retriable, DescribeFailed, InvalidCheckpoint, CommitFailed}
}
