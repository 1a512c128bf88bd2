package kafkalog

import (
	"context"
	"fmt"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// ReadLog reads topic with a LogReader from its oldest offsets to the end
// offsets it has when reading starts (or on and on with follow), calling fn
// for every record, for one-off reads such as the CLI's and a new shard
// owner's restore (cfg.BatchRecords makes the read cheaper). It returns fn's
// first error, or ctx's.
func ReadLog(ctx context.Context, cfg ReaderConfig, topic string, follow bool, fn func(envelope.Record) error) error {
	reader, err := NewLogReader(LogReaderConfig{ReaderConfig: cfg})
	if err != nil {
		return err
	}
	defer reader.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, err := reader.Subscribe(ctx, topic)
	if err != nil {
		return fmt.Errorf("read %s on cluster %s: %w", topic, cfg.Cluster, err)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case msg, ok := <-msgs:
			if !ok {
				return fmt.Errorf("reading %s on cluster %s ended early", topic, cfg.Cluster)
			}
			if ctl, _, _, isCtl := envelope.ControlOf(msg); isCtl {
				msg.Ack()
				if ctl == envelope.CaughtUp && !follow {
					return nil
				}
				continue
			}
			recs, err := envelope.Records(msg)
			msg.Ack()
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if !envelope.IsBatch(msg) {
					rec.Headers = msg.Metadata // a lone record's headers are the message's
				}
				if err := fn(rec); err != nil {
					return err
				}
			}
		}
	}
}

// CheckpointLog reads a checkpoints topic back for a new owner of some
// shards of groups; it implements handlers.CheckpointLog.
type CheckpointLog struct {
	Reader ReaderConfig
	Topic  string
}

// ReadCheckpoints calls fn for every record of the topic, from the oldest to
// the end the topic has when the read starts.
func (l CheckpointLog) ReadCheckpoints(ctx context.Context, fn func(envelope.Record)) error {
	err := ReadLog(ctx, l.Reader, l.Topic, false, func(r envelope.Record) error { fn(r); return nil })
	if err != nil {
		return fmt.Errorf("read the checkpoints topic %s back: %w", l.Topic, err)
	}
	return nil
}
