package kafkalog

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// PartitionCounts tells how many partitions a topic has, from a client's
// metadata cache: one metadata request the first time a topic is asked
// about, none after, so it can be asked per record. A partition at or past
// the cached count makes it look again (partitions may have been added), at
// most once per topic per recheck interval. While the cluster does not
// answer it says it cannot tell, and tries again only after a pause, so a
// caller never waits on a cluster that is down for more than one request.
type PartitionCounts struct {
	dial    func() (sarama.Client, error)
	logger  *slog.Logger
	now     func() time.Time
	recheck time.Duration // between two lookups of one topic, and after a failure

	mu      sync.Mutex
	client  sarama.Client
	counts  map[string]partitionCount
	downTil time.Time // after a failure, no lookup before this
}

type partitionCount struct {
	n       int32 // 0: the topic does not exist (or is not visible)
	checked time.Time
}

// NewPartitionCounts dials its client with dial when first asked, and again
// after a failure to connect. Close closes it. The client's config should
// not create topics on a metadata request (Metadata.AllowAutoTopicCreation)
// and should give up quickly (short timeouts, no retries).
func NewPartitionCounts(dial func() (sarama.Client, error), logger *slog.Logger) *PartitionCounts {
	if logger == nil {
		logger = slog.Default()
	}
	return &PartitionCounts{dial: dial, logger: logger, now: time.Now, recheck: 10 * time.Second,
		counts: make(map[string]partitionCount)}
}

// Has reports whether topic has partition: known is false when it cannot
// tell (the topic is unknown to the cluster or the cluster did not answer),
// in which case has is true. A negative partition is never had.
func (c *PartitionCounts) Has(topic string, partition int32) (has, known bool) {
	if partition < 0 {
		return false, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	pc, ok := c.counts[topic]
	stale := !ok || partition >= pc.n && now.Sub(pc.checked) >= c.recheck
	if stale && !now.Before(c.downTil) {
		n, err := c.lookup(topic, ok)
		if err != nil {
			c.downTil = now.Add(c.recheck)
			c.logger.Debug("partition count unknown; offset syncs of the topic are not checked against it",
				"topic", topic, "error", err)
		} else {
			pc, ok = partitionCount{n: n, checked: now}, true
			c.counts[topic] = pc
		}
	}
	if !ok || pc.n == 0 {
		return true, false
	}
	return partition < pc.n, true
}

// lookup asks the cluster (refresh: again, past the client's cache). The
// caller holds c.mu.
func (c *PartitionCounts) lookup(topic string, refresh bool) (int32, error) {
	if c.client == nil {
		if c.dial == nil {
			return 0, fmt.Errorf("partition counts closed")
		}
		client, err := c.dial()
		if err != nil {
			return 0, fmt.Errorf("connect: %w", err)
		}
		c.client = client
	}
	if refresh {
		if err := c.client.RefreshMetadata(topic); err != nil {
			return 0, fmt.Errorf("metadata of %s: %w", topic, err)
		}
	}
	parts, err := c.client.Partitions(topic)
	switch {
	case err == nil:
		return int32(len(parts)), nil
	case errors.Is(err, sarama.ErrUnknownTopicOrPartition):
		return 0, nil
	}
	return 0, fmt.Errorf("partitions of %s: %w", topic, err)
}

// Close closes the client.
func (c *PartitionCounts) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dial = nil
	if c.client == nil {
		return nil
	}
	err := c.client.Close()
	c.client = nil
	return err
}
