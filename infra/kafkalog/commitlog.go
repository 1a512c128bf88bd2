package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// CommitLogTopic names the compacted topic on the target cluster where
// checkpointd records what it committed into target groups for flows from
// source: next to MM2's <source>.checkpoints.internal, and internal by MM2's
// rules (the .internal suffix), so MM2 never mirrors it.
func CommitLogTopic(source string) string { return source + ".checkpointd-commits.internal" }

// ShardTopic names the topic on the target cluster whose partitions the
// instances share, in admin-poll mode, through their consumer group: each
// partition is a shard of source groups. It holds no records.
func ShardTopic(source string) string { return source + ".checkpointd-shards.internal" }

var anyCheckpointValue = messages.Checkpoint{}.Value()

// CommitLog keeps, on a compacted topic of the target cluster, the offset
// checkpointd last committed into each (group, partition) of a target group,
// as a record in MM2's checkpoint format: key group, topic, partition; value
// the source commit's offset, the committed offset and the commit metadata,
// as in the checkpoint that was committed. It implements handlers.CommitLog.
type CommitLog struct {
	topic  string
	reader ReaderConfig
	pub    message.Publisher
	logger *slog.Logger
}

// NewCommitLog makes a commit log on topic: reader reads it back (Load),
// pub writes to it (Append). It creates nothing; see EnsureTopic.
func NewCommitLog(topic string, reader ReaderConfig, pub message.Publisher, logger *slog.Logger) *CommitLog {
	if logger == nil {
		logger = slog.Default()
	}
	return &CommitLog{topic: topic, reader: reader, pub: pub, logger: logger}
}

// Load reads the topic to its end: per group and partition, what was last
// committed, of the groups keep accepts (every group with a nil keep: a
// shard's new owner keeps its shard's). keepKey, if not nil, steps over the
// records whose key it refuses before they are decoded. A record it cannot decode is
// skipped with a warning: the partition then counts as never committed by
// checkpointd, which only makes the commit stage leave it alone. The topic
// may have any number of partitions: a group's records are in one, as
// the keys decide.
func (l *CommitLog) Load(ctx context.Context, keepKey func(key []byte) bool, keep func(group string) bool) (map[string]map[messages.TopicPartition]targetgroup.Checkpoint, error) {
	out := make(map[string]map[messages.TopicPartition]targetgroup.Checkpoint)
	skipped := 0
	began := time.Now()
	err := ReadBackKeys(ctx, l.reader, l.topic, keepKey, func(r envelope.Record) error {
		cp, err := messages.DecodeCheckpoint(r.Key, r.Value)
		switch {
		case errors.Is(err, messages.ErrTombstone):
			// Someone deleted the record: forget the commit. The key is
			// decoded with any valid value.
			if k, kerr := messages.DecodeCheckpoint(r.Key, anyCheckpointValue); kerr == nil {
				delete(out[k.Group], k.TopicPartition)
			}
			return nil
		case err != nil:
			skipped++
			l.logger.Warn("skipping a record of the commit log that does not decode", "topic", l.topic,
				"partition", r.Partition, "offset", r.Offset, "error", err)
			return nil
		}
		if keep != nil && !keep(cp.Group) {
			return nil
		}
		g := out[cp.Group]
		if g == nil {
			g = make(map[messages.TopicPartition]targetgroup.Checkpoint)
			out[cp.Group] = g
		}
		// The metadata stays out: the commit stage's rule does not need it,
		// and it can be most of a record's size.
		g[cp.TopicPartition] = targetgroup.Checkpoint{Downstream: cp.DownstreamOffset, Upstream: cp.UpstreamOffset}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the commit log %s: %w", l.topic, err)
	}
	l.logger.Info("read what checkpointd committed into target groups", "topic", l.topic, "groups", len(out), "skipped", skipped,
		"took", time.Since(began).Round(time.Millisecond))
	return out, nil
}

// commitLogChunk bounds the records of one write: a first start commits
// 500 groups × all their partitions per batch, and one message per record
// for all of them at once would set the process's peak memory.
const commitLogChunk = 4096

// Append writes commits, in chunks, in order, and returns once the broker
// has them all.
func (l *CommitLog) Append(_ context.Context, commits []messages.Checkpoint) error {
	for chunk := range slices.Chunk(commits, commitLogChunk) {
		if err := l.write(chunk); err != nil {
			return fmt.Errorf("write the commit log %s: %w", l.topic, err)
		}
	}
	return nil
}

func (l *CommitLog) write(batch []messages.Checkpoint) error {
	msgs := make([]*message.Message, 0, len(batch))
	for _, cp := range batch {
		if err := cp.Validate(); err != nil {
			// Not recorded means not committed: the caller holds the commit.
			return fmt.Errorf("commit of group %q: %w", cp.Group, err)
		}
		msg := message.NewMessage(cp.Group+"/"+cp.TopicPartition.String()+"/"+strconv.FormatInt(cp.DownstreamOffset, 10), cp.Value())
		msg.Metadata.Set(envelope.MetaKey, string(cp.Key()))
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return nil
	}
	return l.pub.Publish(l.topic, msgs...)
}
