package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/IBM/sarama"
)

// connect makes a client of the cluster, retrying with backoff until it
// succeeds or ctx ends (then it returns nil). sarama.NewClient does not watch
// a context and may dial for long, so it runs aside and a late client is
// closed when it arrives.
func connect(ctx context.Context, cfg *ReaderConfig, saramaCfg *sarama.Config, log *slog.Logger) sarama.Client {
	type result struct {
		client sarama.Client
		err    error
	}
	bo := newBackoff(cfg.RetryBackoff, cfg.MaxRetryBackoff)
	var fails failureLog
	for {
		done := make(chan result, 1)
		go func() {
			client, err := NewClient(cfg.Brokers, saramaCfg)
			done <- result{client, err}
		}()
		select {
		case res := <-done:
			if res.err == nil {
				fails.ok(log, "connected to cluster", "brokers", cfg.Brokers)
				cfg.Observer.ReadReady("")
				return res.client
			}
			fails.failed(log, "cannot connect to cluster", res.err, "brokers", cfg.Brokers)
			cfg.Observer.ReadFailed("", fmt.Errorf("connect to %v: %w", cfg.Brokers, res.err))
		case <-ctx.Done():
			go func() {
				if res := <-done; res.client != nil {
					_ = res.client.Close()
				}
			}()
			return nil
		}
		if !pause(ctx, bo) {
			return nil
		}
	}
}

// awaitTopic returns the topic's partitions once the topic exists, retrying
// with backoff, or nil if ctx ends first. It never creates the topic: the
// client config forbids auto-creation.
func awaitTopic(ctx context.Context, cfg *ReaderConfig, client sarama.Client, topic string, log *slog.Logger) []int32 {
	bo := newBackoff(cfg.RetryBackoff, cfg.MaxRetryBackoff)
	waiting := false
	for {
		partitions, err := topicPartitions(client, topic)
		switch {
		case err == nil && len(partitions) > 0:
			if waiting {
				log.Info("topic found", "partitions", len(partitions))
			}
			return partitions
		case err == nil || errors.Is(err, sarama.ErrUnknownTopicOrPartition):
			if !waiting {
				log.Warn("waiting for topic")
			}
			waiting = true
		default: // authorization and the like: say so every time, the backoff paces it
			log.Warn("cannot read topic metadata", "error", err)
			cfg.Observer.ReadFailed(topic, fmt.Errorf("topic %s metadata: %w", topic, err))
		}
		if !pause(ctx, bo) {
			return nil
		}
	}
}

// topicPartitions asks the cluster, not the client's cache, for the topic's
// partitions.
func topicPartitions(client sarama.Client, topic string) ([]int32, error) {
	if err := client.RefreshMetadata(topic); err != nil {
		return nil, err
	}
	return client.Partitions(topic)
}
