package handlers

import (
	"fmt"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// checkSync refuses an offset sync that decoded but cannot be right: a
// negative partition or offset (messages.OffsetSync.Check), or a partition
// its source topic does not have (CheckpointerConfig.Partitions). The
// caller skips it as malformed, which counts and logs it. Bytes after the
// last field are accepted, as MirrorMaker does, and counted.
func (c *Checkpointer) checkSync(rec envelope.Record, s messages.OffsetSync) error {
	if err := s.Check(); err != nil {
		return err
	}
	if c.cfg.Partitions != nil {
		if has, known := c.cfg.Partitions(s.Topic, s.Partition); known && !has {
			return fmt.Errorf("offset sync of %s: topic %s has no partition %d on the source: %w",
				s.TopicPartition, s.Topic, s.Partition, messages.ErrImplausible)
		}
	}
	if n := s.TrailingBytes(rec.Key, rec.Value); n > 0 {
		if c.syncsTrailing.Add(1) == 1 {
			c.cfg.Logger.Warn("offset sync with bytes after its last field; applied as MirrorMaker does, counted from now on",
				"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "trailing_bytes", n)
		}
	}
	return nil
}

// SyncsWithTrailingBytes is how many offset syncs were applied though their
// key or value went on after the last field.
func (c *Checkpointer) SyncsWithTrailingBytes() int64 { return c.syncsTrailing.Load() }
