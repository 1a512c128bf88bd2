package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// errTombstone marks a null value where the format has none.
var errTombstone = errors.New("unexpected tombstone (null value)")

// HandleOffsetSync is the index stage: a Watermill handler over the
// offset-syncs topic, read from its beginning by every instance.
func (c *Checkpointer) HandleOffsetSync(msg *message.Message) error {
	return c.handleWholeTopic(msg, c.SyncsReadToEnd, func(rec envelope.Record) error {
		sync, err := messages.DecodeOffsetSync(rec.Key, rec.Value)
		if err == nil {
			err = c.checkSync(rec, sync)
		}
		if err == nil {
			c.ApplySync(msg.Context(), sync)
			c.cfg.Observer.OffsetSyncApplied(msg.Context(), sync)
		}
		return err
	})
}

// HandleCheckpointRecord restores emitted checkpoints from the checkpoints
// topic on the target; every instance reads it from its beginning.
func (c *Checkpointer) HandleCheckpointRecord(msg *message.Message) error {
	return c.handleWholeTopic(msg, c.CheckpointsReadToEnd, func(rec envelope.Record) error {
		if c.sharded() && !c.cfg.Shards.MayHoldKey(rec.Key) {
			return nil // another instance's group: not even decoded
		}
		cp, err := messages.DecodeCheckpoint(rec.Key, rec.Value)
		if err == nil {
			c.CheckpointSeenAt(cp, rec.Offset)
		}
		return err
	})
}

// handleWholeTopic is the shape both whole-topic readers share: CaughtUp ends
// the start-up read, tombstones and records that fail to decode are skipped
// as malformed, one at a time. A message may carry several records of a
// partition (kafkalog.ReaderConfig.BatchRecords); they are applied in order.
func (c *Checkpointer) handleWholeTopic(msg *message.Message, readToEnd func(context.Context), apply func(envelope.Record) error) error {
	if ctl, _, _, ok := envelope.ControlOf(msg); ok {
		if ctl == envelope.CaughtUp {
			readToEnd(msg.Context())
		}
		return nil
	}
	recs, err := envelope.Records(msg)
	if err != nil {
		return fmt.Errorf("%s message: %w", msg.Metadata.Get(envelope.MetaTopic), err)
	}
	for _, rec := range recs {
		if rec.Tombstone() {
			c.malformed(rec, errTombstone)
			continue
		}
		if err := apply(rec); err != nil {
			c.malformed(rec, err)
		}
	}
	return nil
}

// HandleSourceCommit is the translate stage: a Watermill handler over source
// group commits, from the __consumer_offsets tail or the admin poller (both
// deliver __consumer_offsets-format records and the same control messages).
func (c *Checkpointer) HandleSourceCommit(msg *message.Message) error {
	if ctl, _, p, ok := envelope.ControlOf(msg); ok {
		switch ctl {
		case envelope.Assigned:
			c.ShardAssigned(p)
		case envelope.CaughtUp:
			c.ShardCaughtUp(msg.Context(), p)
		case envelope.Revoked:
			c.ShardRevoked(p)
		}
		return nil
	}
	// A reader that replays or has fallen behind sends several records of a
	// partition in one message (kafkalog.ReaderConfig.BatchBehind); they are
	// applied in order, and the span of the message covers them all.
	recs, err := envelope.Records(msg)
	if err != nil {
		return fmt.Errorf("source commit message: %w", err)
	}
	for _, rec := range recs {
		var value []byte
		if !rec.Tombstone() {
			value = rec.Value
		}
		or, err := messages.DecodeOffsetsRecord(rec.Key, value)
		if err != nil {
			c.malformed(rec, err)
			continue
		}
		c.SourceCommit(msg.Context(), rec.Partition, or, rec.Timestamp)
	}
	return nil
}

func (c *Checkpointer) malformed(rec envelope.Record, err error) {
	c.cfg.Observer.RecordMalformed(rec.Topic, rec.Partition, rec.Offset, err)
	c.cfg.Logger.Warn("skipping malformed record",
		"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "error", err)
}
