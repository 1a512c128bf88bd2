package targetgroups

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/messages"
)

// Default lifetimes of the topic cache's entries.
const (
	// DefaultTopicTTL is how long the partitions of an existing topic are
	// taken as known: partitions are rarely added, and a commit to one the
	// cache does not know yet is only delayed, never wrong.
	DefaultTopicTTL = 30 * time.Second
	// DefaultMissingTopicTTL is how long a topic stays known as missing: MM2
	// creates remote topics while checkpoints for them already flow, so a
	// missing topic is asked about again soon.
	DefaultMissingTopicTTL = 5 * time.Second
)

// ExistingPartitions returns the partitions of topics that exist on the
// target. A topic that does not exist is simply absent: nothing is created,
// the metadata request asks for no auto-creation. Answers are cached (see
// DefaultTopicTTL and DefaultMissingTopicTTL); the topics not in the cache
// are described in one request. A topic that could not be described (not
// authorized, no leader yet, the request failed, ...) is in the second map
// and is not cached; the first still holds every topic that could.
func (c *Client) ExistingPartitions(ctx context.Context, topics []string) (map[messages.TopicPartition]bool, map[string]error) {
	out := make(map[messages.TopicPartition]bool)
	todo := c.topics.lookup(uniq(topics), time.Now(), out)
	if len(todo) == 0 {
		return out, nil
	}
	failed := make(map[string]error)
	if err := ctx.Err(); err != nil {
		return out, failAll(failed, todo, err)
	}
	metas, err := c.admin.DescribeTopics(todo)
	if err != nil {
		return out, failAll(failed, todo, fmt.Errorf("describe %d topics on the target: %w", len(todo), err))
	}
	now := time.Now()
	for _, m := range metas {
		switch m.Err {
		case sarama.ErrNoError:
			ids := make([]int32, len(m.Partitions))
			for i, p := range m.Partitions {
				ids[i] = p.ID
				out[messages.TopicPartition{Topic: m.Name, Partition: p.ID}] = true
			}
			c.topics.store(m.Name, ids, now)
		case sarama.ErrUnknownTopicOrPartition, sarama.ErrInvalidTopic:
			// missing: the caller skips its partitions
			c.topics.store(m.Name, nil, now)
		case sarama.ErrTopicAuthorizationFailed:
			failed[m.Name] = kafkaerr.Needs(fmt.Errorf("describe topic %q on the target: %w", m.Name, m.Err),
				kafkaerr.Permission{Operation: "DESCRIBE", ResourceType: "topic", Name: m.Name})
		default:
			failed[m.Name] = fmt.Errorf("describe topic %q on the target: %w", m.Name, m.Err)
		}
	}
	if len(failed) == 0 {
		return out, nil
	}
	return out, failed
}

func failAll(failed map[string]error, topics []string, err error) map[string]error {
	for _, t := range topics {
		failed[t] = err
	}
	return failed
}

// topicCache remembers which partitions target topics have, so that a sync
// round over many groups does not describe the same topics again and again.
// Only answers are cached, never failures.
type topicCache struct {
	ttl, missingTTL time.Duration

	mu      sync.Mutex
	entries map[string]topicEntry
}

type topicEntry struct {
	partitions []int32 // nil: the topic does not exist
	expires    time.Time
}

func newTopicCache(ttl, missingTTL time.Duration) *topicCache {
	return &topicCache{ttl: ttl, missingTTL: missingTTL, entries: make(map[string]topicEntry)}
}

// lookup adds the cached partitions of topics to out and returns the topics
// it knows nothing fresh about.
func (c *topicCache) lookup(topics []string, now time.Time, out map[messages.TopicPartition]bool) (todo []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		e, ok := c.entries[t]
		if !ok || !now.Before(e.expires) {
			delete(c.entries, t) // keeps deleted topics from piling up
			todo = append(todo, t)
			continue
		}
		for _, p := range e.partitions {
			out[messages.TopicPartition{Topic: t, Partition: p}] = true
		}
	}
	return todo
}

// store remembers topic's partitions, nil for a missing topic.
func (c *topicCache) store(topic string, partitions []int32, now time.Time) {
	ttl := c.ttl
	if partitions == nil {
		ttl = c.missingTTL
	}
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[topic] = topicEntry{partitions: partitions, expires: now.Add(ttl)}
}
