package handlers

import (
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
	if ctl, _, _, ok := envelope.ControlOf(msg); ok {
		if ctl == envelope.CaughtUp {
			c.SyncsReadToEnd(msg.Context())
		}
		return nil
	}
	rec, err := envelope.ToRecord(msg)
	if err != nil {
		return fmt.Errorf("offset sync message: %w", err)
	}
	if rec.Tombstone() {
		c.malformed(rec, errTombstone)
		return nil
	}
	sync, err := messages.DecodeOffsetSync(rec.Key, rec.Value)
	if err != nil {
		c.malformed(rec, err)
		return nil
	}
	c.ApplySync(msg.Context(), sync)
	return nil
}

// HandleCheckpointRecord restores emitted checkpoints from the checkpoints
// topic on the target; every instance reads it from its beginning.
func (c *Checkpointer) HandleCheckpointRecord(msg *message.Message) error {
	if ctl, _, _, ok := envelope.ControlOf(msg); ok {
		if ctl == envelope.CaughtUp {
			c.CheckpointsReadToEnd(msg.Context())
		}
		return nil
	}
	rec, err := envelope.ToRecord(msg)
	if err != nil {
		return fmt.Errorf("checkpoint message: %w", err)
	}
	if rec.Tombstone() {
		c.malformed(rec, errTombstone)
		return nil
	}
	cp, err := messages.DecodeCheckpoint(rec.Key, rec.Value)
	if err != nil {
		c.malformed(rec, err)
		return nil
	}
	c.CheckpointSeen(cp)
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
	rec, err := envelope.ToRecord(msg)
	if err != nil {
		return fmt.Errorf("source commit message: %w", err)
	}
	var value []byte
	if !rec.Tombstone() {
		value = rec.Value
	}
	or, err := messages.DecodeOffsetsRecord(rec.Key, value)
	if err != nil {
		c.malformed(rec, err)
		return nil
	}
	c.SourceCommit(msg.Context(), rec.Partition, or, rec.Timestamp)
	return nil
}

func (c *Checkpointer) malformed(rec envelope.Record, err error) {
	c.cfg.Observer.RecordMalformed(rec.Topic, rec.Partition, rec.Offset, err)
	c.cfg.Logger.Warn("skipping malformed record",
		"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "error", err)
}
