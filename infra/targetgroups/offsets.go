package targetgroups

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// Offsets returns the group's committed offsets on the target. Partitions
// without a commit, or with a negative one (a client reset it to -1), are
// left out. A group that does not exist has no offsets: Kafka answers it
// with -1 offsets, kfake with GROUP_ID_NOT_FOUND, and both give an empty map.
func (c *Client) Offsets(ctx context.Context, group string) (map[messages.TopicPartition]int64, error) {
	var out map[messages.TopicPartition]int64
	version := c.client.Config().Version
	failed := c.eachCoordinator(ctx, []string{group}, func(b *sarama.Broker, _ []string) (map[string]error, error) {
		resp, err := b.FetchOffset(sarama.NewOffsetFetchRequest(version, group, nil))
		if err != nil {
			return nil, err
		}
		var gerr error
		out, gerr = committedOffsets(resp, group)
		return map[string]error{group: gerr}, nil
	})
	if err := failed[group]; err != nil {
		return nil, fmt.Errorf("offsets of group %q on the target: %w", group, err)
	}
	return out, nil
}

// committedOffsets reads one group's offsets out of an OffsetFetch response
// of any version.
func committedOffsets(resp *sarama.OffsetFetchResponse, group string) (map[messages.TopicPartition]int64, error) {
	blocks, gerr := resp.Blocks, resp.Err
	if resp.Version >= 8 {
		g := resp.GetGroup(group)
		if g == nil {
			return nil, errNoAnswer
		}
		blocks, gerr = g.Blocks, g.Err
	}
	switch gerr {
	case sarama.ErrNoError:
	case sarama.ErrGroupIDNotFound:
		return map[messages.TopicPartition]int64{}, nil
	case sarama.ErrGroupAuthorizationFailed:
		return nil, fmt.Errorf("%w (the principal needs DESCRIBE on group %q on the target cluster)", gerr, group)
	default:
		return nil, gerr
	}
	out := make(map[messages.TopicPartition]int64)
	for topic, parts := range blocks {
		for p, b := range parts {
			tp := messages.TopicPartition{Topic: topic, Partition: p}
			if b.Err != sarama.ErrNoError {
				return nil, fmt.Errorf("%s: %w", tp, b.Err)
			}
			if b.Offset >= 0 {
				out[tp] = b.Offset
			}
		}
	}
	return out, nil
}
