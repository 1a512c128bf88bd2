package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/cenkalti/backoff/v5"
)

// ConsumerOffsetsTopic is where Kafka keeps group commits.
const ConsumerOffsetsTopic = "__consumer_offsets"

// offsetsLogWait bounds how long OffsetsLogReadable waits for a fresh
// cluster to create __consumer_offsets and give its partitions leaders.
const offsetsLogWait = 5 * time.Second

// OffsetsLogReadable connects to brokers with cfg and reports whether its
// principal can read __consumer_offsets: the topic must be visible in
// metadata and its offsets listable. When it is not, why says what was
// missing. It returns an error, not "unreadable", when the cluster could not
// be asked: a refused connection, a timeout, a failed TLS or SASL
// handshake, or ctx ended. group is a group of the caller's: looking up its
// coordinator makes a fresh cluster create the topic.
func OffsetsLogReadable(ctx context.Context, brokers []string, cfg *sarama.Config, group string) (readable bool, why string, err error) {
	client, err := NewClient(brokers, cfg)
	if err != nil {
		return false, "", fmt.Errorf("connect: %w", err)
	}
	defer client.Close()

	parts, err := client.Partitions(ConsumerOffsetsTopic)
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		// Kafka creates __consumer_offsets on the first group request, so a
		// fresh cluster has none yet. A service that hides the topic still
		// answers "unknown" after that.
		_, _ = client.Coordinator(group)
		parts, err = retryWhile(ctx, func(err error) bool { return errors.Is(err, sarama.ErrUnknownTopicOrPartition) },
			func() ([]int32, error) {
				_ = client.RefreshMetadata(ConsumerOffsetsTopic) // a failure shows in Partitions
				return client.Partitions(ConsumerOffsetsTopic)
			})
	}
	switch {
	case errors.Is(err, sarama.ErrUnknownTopicOrPartition):
		return false, "topic not visible", nil
	case hidden(err):
		return false, fmt.Sprintf("metadata: %v", err), nil
	case err != nil:
		return false, "", fmt.Errorf("metadata of %s: %w", ConsumerOffsetsTopic, err)
	case len(parts) == 0:
		return false, "no partitions visible", nil
	}
	// A partition of a topic just created may have no leader for a moment.
	_, err = retryWhile(ctx, func(err error) bool { return !hidden(err) }, func() (int64, error) {
		return client.GetOffset(ConsumerOffsetsTopic, parts[0], sarama.OffsetNewest)
	})
	switch {
	case hidden(err):
		return false, "not authorized (READ and DESCRIBE on topic __consumer_offsets are needed)", nil
	case err != nil:
		return false, "", fmt.Errorf("list offsets of %s: %w", ConsumerOffsetsTopic, err)
	}
	return true, "", nil
}

// retryWhile calls op until it succeeds, fails with an error again does not
// want retried, ctx ends (its error is returned) or offsetsLogWait has
// passed (op's last error is returned).
func retryWhile[T any](ctx context.Context, again func(error) bool, op func() (T, error)) (T, error) {
	return backoff.Retry(ctx, func() (T, error) {
		v, err := op()
		if err != nil && !again(err) {
			return v, backoff.Permanent(err)
		}
		return v, err
	}, backoff.WithBackOff(newBackoff(100*time.Millisecond, time.Second)), backoff.WithMaxElapsedTime(offsetsLogWait))
}

// hidden reports whether err says the principal may not see or read a
// topic, which makes __consumer_offsets unreadable rather than unreachable.
func hidden(err error) bool {
	return errors.Is(err, sarama.ErrTopicAuthorizationFailed) || errors.Is(err, sarama.ErrClusterAuthorizationFailed) ||
		errors.Is(err, sarama.ErrInvalidTopic)
}
