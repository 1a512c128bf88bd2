package kafkalog

import (
	"errors"
	"fmt"

	"github.com/IBM/sarama"
)

// listOffsets asks each partition's leader for its oldest or newest offset
// (which is sarama.OffsetOldest or sarama.OffsetNewest). Unlike
// sarama.Client.GetOffset it sends the consumer's isolation level, so under
// read_committed the newest offset is the last stable offset: the end a
// read_committed consumer can actually reach while a transaction is open.
func listOffsets(client sarama.Client, topic string, partitions []int32, which int64) (map[int32]int64, error) {
	cfg := client.Config()
	byLeader := make(map[*sarama.Broker][]int32)
	for _, p := range partitions {
		leader, err := client.Leader(topic, p)
		if err != nil {
			return nil, fmt.Errorf("leader of partition %d: %w", p, err)
		}
		byLeader[leader] = append(byLeader[leader], p)
	}

	out := make(map[int32]int64, len(partitions))
	for leader, ps := range byLeader {
		req := sarama.NewOffsetRequest(cfg.Version)
		if req.Version >= 2 {
			req.IsolationLevel = cfg.Consumer.IsolationLevel
		}
		for _, p := range ps {
			req.AddBlock(topic, p, which, 1)
		}
		resp, err := leader.GetAvailableOffsets(req)
		if err != nil {
			_ = leader.Close() // sarama reopens it on next use
			return nil, fmt.Errorf("list offsets on broker %d: %w", leader.ID(), err)
		}
		for _, p := range ps {
			block := resp.GetBlock(topic, p)
			if block == nil {
				return nil, fmt.Errorf("list offsets of partition %d: %w", p, sarama.ErrIncompleteResponse)
			}
			if !errors.Is(block.Err, sarama.ErrNoError) {
				if stale(block.Err) {
					_ = client.RefreshMetadata(topic)
				}
				return nil, fmt.Errorf("list offsets of partition %d: %w", p, block.Err)
			}
			if len(block.Offsets) != 1 {
				return nil, fmt.Errorf("list offsets of partition %d: %d offsets in answer", p, len(block.Offsets))
			}
			out[p] = block.Offsets[0]
		}
	}
	return out, nil
}

// stale reports whether err means the client's metadata is out of date.
func stale(err error) bool {
	return errors.Is(err, sarama.ErrNotLeaderForPartition) ||
		errors.Is(err, sarama.ErrLeaderNotAvailable) ||
		errors.Is(err, sarama.ErrUnknownTopicOrPartition) ||
		errors.Is(err, sarama.ErrFencedLeaderEpoch) ||
		errors.Is(err, sarama.ErrUnknownLeaderEpoch)
}
