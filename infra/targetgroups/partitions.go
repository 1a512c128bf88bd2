package targetgroups

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

// ExistingPartitions returns the partitions of topics that exist on the
// target. A topic that does not exist is simply absent: nothing is created,
// the metadata request asks for no auto-creation. The error names the topics
// that could not be described (not authorized, no leader yet, ...); the map
// still holds every topic that could.
func (c *Client) ExistingPartitions(ctx context.Context, topics []string) (map[messages.TopicPartition]bool, error) {
	out := make(map[messages.TopicPartition]bool)
	topics = uniq(topics)
	if len(topics) == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	metas, err := c.admin.DescribeTopics(topics)
	if err != nil {
		return out, fmt.Errorf("describe %d topics on the target: %w", len(topics), err)
	}
	var errs []error
	for _, m := range metas {
		switch m.Err {
		case sarama.ErrNoError:
			for _, p := range m.Partitions {
				out[messages.TopicPartition{Topic: m.Name, Partition: p.ID}] = true
			}
		case sarama.ErrUnknownTopicOrPartition, sarama.ErrInvalidTopic:
			// missing: the caller skips its partitions
		case sarama.ErrTopicAuthorizationFailed:
			errs = append(errs, fmt.Errorf("describe topic %q on the target: %w (the principal needs DESCRIBE on the topic)", m.Name, m.Err))
		default:
			errs = append(errs, fmt.Errorf("describe topic %q on the target: %w", m.Name, m.Err))
		}
	}
	return out, errors.Join(errs...)
}
