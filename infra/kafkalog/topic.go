package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// EnsureTopic creates topic name with the given partitions, replication
// factor and configs unless it exists, and waits until every partition has
// a leader or ctx ends. An existing topic is left as it is. It asks whether
// the topic exists before creating it because Kafka checks CREATE before
// existence: a principal without CREATE would otherwise fail on a topic
// that is already there.
func EnsureTopic(ctx context.Context, admin sarama.ClusterAdmin, name string, partitions int32, replicationFactor int16, configs map[string]*string) error {
	exists, err := topicReady(admin, name)
	if err != nil {
		return err
	}
	if exists {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("create topic %q: %w", name, err)
	}
	err = admin.CreateTopic(name, &sarama.TopicDetail{
		NumPartitions:     partitions,
		ReplicationFactor: replicationFactor,
		ConfigEntries:     configs,
	}, false)
	switch {
	case err == nil, errors.Is(err, sarama.ErrTopicAlreadyExists): // another instance won the race
	case errors.Is(err, sarama.ErrTopicAuthorizationFailed), errors.Is(err, sarama.ErrClusterAuthorizationFailed):
		return fmt.Errorf("create topic %q: not authorized: the principal needs the CREATE ACL on topic %q or on the cluster (or create the topic beforehand): %w", name, name, err)
	default:
		return fmt.Errorf("create topic %q: %w", name, err)
	}

	// Brokers learn of a new topic a little after the controller answers.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ready, err := topicReady(admin, name)
		if err != nil {
			return err
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %q created, but not ready: %w", name, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// ErrTopicNotVisible is what EnsureTopic says when the principal may not
// even describe the topic.
var ErrTopicNotVisible = errors.New("not authorized")

// topicReady reports whether the topic exists with a leader for every
// partition. A topic still being created is not ready.
func topicReady(admin sarama.ClusterAdmin, name string) (bool, error) {
	md, err := admin.DescribeTopics([]string{name})
	if err != nil {
		return false, fmt.Errorf("describe topic %q: %w", name, err)
	}
	if len(md) != 1 {
		return false, fmt.Errorf("describe topic %q: %d topics in answer", name, len(md))
	}
	switch t := md[0]; {
	case errors.Is(t.Err, sarama.ErrUnknownTopicOrPartition), errors.Is(t.Err, sarama.ErrLeaderNotAvailable):
		return false, nil
	case errors.Is(t.Err, sarama.ErrTopicAuthorizationFailed):
		return false, fmt.Errorf("describe topic %q: %w: the principal needs the DESCRIBE ACL on topic %q: %w", name, ErrTopicNotVisible, name, t.Err)
	case !errors.Is(t.Err, sarama.ErrNoError):
		return false, fmt.Errorf("describe topic %q: %w", name, t.Err)
	default:
		if len(t.Partitions) == 0 {
			return false, nil
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				return false, nil
			}
		}
		return true, nil
	}
}
