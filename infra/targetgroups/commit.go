package targetgroups

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Offset is a translated offset to commit on the target.
type Offset struct {
	Offset   int64
	Metadata string // copied from the source commit, as MM2 does
}

// PartitionResult is what became of one partition of a commit.
type PartitionResult struct {
	Reason targetgroup.Reason
	Err    error // the broker's or the connection's error; nil when committed
}

// CommitResult has one entry for every partition handed to Commit.
type CommitResult struct {
	Group      string
	Partitions map[messages.TopicPartition]PartitionResult
}

// Count returns how many partitions ended with reason.
func (r CommitResult) Count(reason targetgroup.Reason) int {
	n := 0
	for _, p := range r.Partitions {
		if p.Reason == reason {
			n++
		}
	}
	return n
}

// Commit writes offsets into group on the target without joining it: an
// OffsetCommit with generation -1, no member id, no group instance id and
// leader epoch -1 (the source's epochs mean nothing on the target and would
// make KIP-320 consumers validate against the wrong history). The broker
// refuses the commit atomically if the group has members, so a group that
// became active since it was described is never written.
//
// Every per-partition answer is classified; a partition whose coordinator
// moved is retried within the client's Admin.Retry budget. The error is set
// when the group as a whole failed: its ACLs are missing (fatal until fixed),
// or it was still unreachable after the retries (every partition Retriable).
func (c *Client) Commit(ctx context.Context, group string, offsets map[messages.TopicPartition]Offset) (CommitResult, error) {
	res := CommitResult{Group: group, Partitions: make(map[messages.TopicPartition]PartitionResult, len(offsets))}
	pending := maps.Clone(offsets)
	var lastErr error
	bo := c.retryBackoff()
	for attempt := 0; len(pending) > 0 && attempt <= c.retries; attempt++ {
		if err := c.pause(ctx, bo, attempt); err != nil {
			lastErr = err
			break
		}
		lastAttempt := attempt == c.retries
		resp, err := c.sendCommit(ctx, group, pending)
		if err != nil {
			lastErr = err
			if !retryAtCoordinator(err) {
				break
			}
			_ = c.client.RefreshCoordinator(group)
			continue
		}
		moved := false
		for tp := range pending {
			kerr, ok := resp.Errors[tp.Topic][tp.Partition]
			if !ok {
				res.Partitions[tp] = PartitionResult{Reason: targetgroup.CommitFailed, Err: fmt.Errorf("%s: %w", tp, errNoAnswer)}
				delete(pending, tp)
				continue
			}
			if !lastAttempt && retryAtCoordinator(kerr) {
				moved, lastErr = true, kerr
				continue
			}
			res.Partitions[tp] = partitionResult(group, tp, kerr)
			delete(pending, tp)
		}
		if moved {
			_ = c.client.RefreshCoordinator(group)
		}
	}
	for tp := range pending {
		res.Partitions[tp] = PartitionResult{Reason: targetgroup.Retriable, Err: lastErr}
	}
	for _, p := range res.Partitions {
		if errors.Is(p.Err, sarama.ErrGroupAuthorizationFailed) {
			return res, p.Err
		}
	}
	if len(pending) > 0 {
		return res, fmt.Errorf("commit offsets of group %q on the target: %w", group, lastErr)
	}
	return res, nil
}

// sendCommit sends one OffsetCommit for offsets to group's coordinator, over
// one of the commit connections to it, so that commits into groups on one
// coordinator overlap.
func (c *Client) sendCommit(ctx context.Context, group string, offsets map[messages.TopicPartition]Offset) (*sarama.OffsetCommitResponse, error) {
	req := sarama.NewOffsetCommitRequest(c.client.Config(), group) // generation -1, member "", no instance id
	var timestamp int64
	if req.Version == 1 {
		timestamp = sarama.ReceiveTime // v1 carries a commit time; the broker fills it in
	}
	for tp, o := range offsets {
		// sarama's AddBlock and a zero OffsetAndMetadata send epoch 0; -1 is "none".
		req.AddBlockWithLeaderEpoch(tp.Topic, tp.Partition, o.Offset, -1, timestamp, o.Metadata)
	}
	b, err := c.client.Coordinator(group)
	if err != nil {
		return nil, err
	}
	return c.commits.commit(ctx, b, req)
}

func partitionResult(group string, tp messages.TopicPartition, kerr sarama.KError) PartitionResult {
	reason := commitReason(kerr)
	var err error
	switch {
	case reason == targetgroup.Committed:
	case kerr == sarama.ErrGroupAuthorizationFailed:
		err = kafkaerr.Needs(fmt.Errorf("commit offsets of group %q on the target: %w", group, kerr),
			kafkaerr.Permission{Operation: "READ", ResourceType: "group", Name: group})
	case kerr == sarama.ErrTopicAuthorizationFailed:
		err = kafkaerr.Needs(fmt.Errorf("commit %s of group %q on the target: %w", tp, group, kerr),
			kafkaerr.Permission{Operation: "READ", ResourceType: "topic", Name: tp.Topic})
	default:
		err = fmt.Errorf("commit %s of group %q on the target: %w", tp, group, kerr)
	}
	return PartitionResult{Reason: reason, Err: err}
}
