package targetgroups

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/messages"
)

// Offsets returns the committed offsets of each of groups on the target, in
// one OffsetFetch per coordinator where the brokers speak v8 (Kafka 3.0+),
// else one per group. Partitions without a commit, or with a negative one (a
// client reset it to -1), are left out. A group that does not exist has no
// offsets: Kafka answers it with -1 offsets, kfake with GROUP_ID_NOT_FOUND,
// and both give an empty map. A group that could not be read, even after the
// coordinator retries, is in the second map instead of the first.
func (c *Client) Offsets(ctx context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	groups = uniq(groups)
	out := make(map[string]map[messages.TopicPartition]int64, len(groups))
	if len(groups) == 0 {
		return out, nil
	}
	// eachCoordinator asks one coordinator at a time, so out needs no lock.
	failed := c.eachCoordinator(ctx, groups, func(b *sarama.Broker, gs []string) (map[string]error, error) {
		return c.fetchOffsets(b, gs, out)
	})
	if len(failed) == 0 {
		return out, nil
	}
	errs := make(map[string]error, len(failed))
	for g, err := range failed {
		delete(out, g)
		errs[g] = fmt.Errorf("offsets of group %q on the target: %w", g, err)
	}
	return out, errs
}

// fetchOffsets reads the offsets of groups, which share coordinator b, into
// out: in one request when the broker takes several groups in one, else in
// one request per group.
func (c *Client) fetchOffsets(b *sarama.Broker, groups []string, out map[string]map[messages.TopicPartition]int64) (map[string]error, error) {
	version := c.client.Config().Version
	req := sarama.NewOffsetFetchRequest(version, "", nil)
	if req.Version < 8 || len(groups) == 1 {
		return c.fetchOffsetsOneByOne(b, groups, out)
	}
	req.Groups = make([]sarama.OffsetFetchRequestGroup, len(groups))
	for i, g := range groups {
		req.Groups[i] = sarama.OffsetFetchRequestGroup{GroupId: g} // nil partitions: all of them
	}
	resp, err := b.FetchOffset(req)
	var encErr sarama.PacketEncodingError
	if errors.As(err, &encErr) {
		// sarama lowered the request to the broker's highest version, and
		// below v8 (a broker before 3.0) a request holds one group; the
		// request was never sent.
		return c.fetchOffsetsOneByOne(b, groups, out)
	}
	if err != nil {
		return nil, err
	}
	errs := make(map[string]error, len(groups))
	for _, g := range groups {
		if resp.GetGroup(g) == nil {
			continue // eachCoordinator asks again for a group left out
		}
		out[g], errs[g] = committedOffsets(resp, g)
	}
	return errs, nil
}

// fetchOffsetsOneByOne sends one OffsetFetch per group, the only way before
// v8. A connection failure ends the round: the groups not asked yet are
// retried with the rest.
func (c *Client) fetchOffsetsOneByOne(b *sarama.Broker, groups []string, out map[string]map[messages.TopicPartition]int64) (map[string]error, error) {
	version := c.client.Config().Version
	errs := make(map[string]error, len(groups))
	for _, g := range groups {
		resp, err := b.FetchOffset(sarama.NewOffsetFetchRequest(version, g, nil))
		if err != nil {
			return errs, err
		}
		out[g], errs[g] = committedOffsets(resp, g)
	}
	return errs, nil
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
		return nil, kafkaerr.Needs(gerr, kafkaerr.Permission{Operation: "DESCRIBE", ResourceType: "group", Name: group})
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
