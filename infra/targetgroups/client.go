// Package targetgroups is the target-cluster adapter for committing
// translated offsets into consumer groups: it describes groups (classic and
// KIP-848), reads their committed offsets, tells which target partitions
// exist, and commits offsets the way MirrorMaker 2's admin client does,
// without joining the group. Every broker answer is classified per partition
// into a targetgroup.Reason.
package targetgroups

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/cenkalti/backoff/v5"
)

// Client talks to the target cluster. It borrows the sarama client and never
// closes it; OffsetCommits go over connections of the Client's own (see
// WithCommitConnections), which Close closes.
type Client struct {
	client  sarama.Client
	admin   sarama.ClusterAdmin
	logger  *slog.Logger
	retries int           // extra attempts after a coordinator moved or a connection failed
	backoff time.Duration // pause before each extra attempt
	topics  *topicCache
	commits *commitConns // the extra connections OffsetCommits use
}

// Option adjusts a Client.
type Option func(*Client)

// WithTopicCacheTTL sets how long ExistingPartitions trusts what it learnt
// about a topic that exists (ttl) and one that does not (missingTTL). Zero
// or less turns that half of the cache off.
func WithTopicCacheTTL(ttl, missingTTL time.Duration) Option {
	return func(c *Client) { c.topics = newTopicCache(ttl, missingTTL) }
}

// New wraps a client of the target cluster. Retries and their backoff come
// from the client's Admin.Retry settings.
func New(client sarama.Client, logger *slog.Logger, opts ...Option) (*Client, error) {
	if client == nil {
		return nil, errors.New("target groups: nil sarama client")
	}
	if logger == nil {
		logger = slog.Default()
	}
	// The admin only borrows the client; closing it would close the client,
	// so it is never closed.
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("target groups: admin client: %w", err)
	}
	conf := client.Config()
	if !conf.Version.IsAtLeast(sarama.V3_7_0_0) {
		logger.Warn("target client version is below 3.7: KIP-848 consumer groups cannot be described and look absent; only the broker's commit check keeps them from being written",
			"version", conf.Version.String())
	}
	c := &Client{
		client:  client,
		admin:   admin,
		logger:  logger,
		retries: max(conf.Admin.Retry.Max, 0),
		backoff: conf.Admin.Retry.Backoff,
		topics:  newTopicCache(DefaultTopicTTL, DefaultMissingTopicTTL),
		commits: newCommitConns(conf, logger),
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// retryBackoff paces the extra attempts of one call: Admin.Retry.Backoff
// each, as sarama's admin waits, with ±20 % jitter so that calls that failed
// together do not retry in step. One per call: it is not safe for
// concurrent use.
func (c *Client) retryBackoff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: c.backoff, MaxInterval: c.backoff, Multiplier: 1, RandomizationFactor: 0.2}
}

// pause waits the next pause of bo before attempt number attempt (counted
// from 1; none before attempt 0), or returns the context's error.
func (c *Client) pause(ctx context.Context, bo backoff.BackOff, attempt int) error {
	if attempt == 0 || c.backoff <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(bo.NextBackOff())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
