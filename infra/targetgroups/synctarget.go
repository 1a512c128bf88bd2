package targetgroups

import (
	"context"
	"errors"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// SyncTarget is a Client seen through groupsync's types, the shape the
// offset syncer (targetgroup.Groups) takes.
type SyncTarget struct{ *Client }

// Describe is Client.Describe reduced to what the sync decision reads.
func (t SyncTarget) Describe(ctx context.Context, groups []string) (map[string]targetgroup.Group, error) {
	states, err := t.Client.Describe(ctx, groups)
	out := make(map[string]targetgroup.Group, len(states))
	for g, s := range states {
		out[g] = s.Target()
	}
	return out, err
}

// Commit commits each checkpoint's downstream offset and metadata and
// returns every partition's reason. Besides the group-level error of
// Client.Commit, the error carries the partitions that need an operator
// (missing ACLs, metadata too large, other refusals), so the caller's log
// says which and why; an active group or a transient error is no error.
func (t SyncTarget) Commit(ctx context.Context, group string, checkpoints map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	offsets := make(map[messages.TopicPartition]Offset, len(checkpoints))
	for tp, cp := range checkpoints {
		offsets[tp] = Offset{Offset: cp.Downstream, Metadata: cp.Metadata}
	}
	res, err := t.Client.Commit(ctx, group, offsets)
	reasons := make(map[messages.TopicPartition]targetgroup.Reason, len(res.Partitions))
	errs := []error{err}
	for tp, p := range res.Partitions {
		reasons[tp] = p.Reason
		switch p.Reason {
		case targetgroup.MetadataTooLarge, targetgroup.CommitFailed:
			errs = append(errs, p.Err)
		case targetgroup.Unauthorized:
			if err == nil { // a group-level refusal is err already
				errs = append(errs, p.Err)
			}
		}
	}
	return reasons, errors.Join(errs...)
}
