package kafkalog

import (
	"context"
	"fmt"

	"github.com/checkpointd/checkpointd/messages/envelope"
)

// ReadLog reads topic with a LogReader from its oldest offsets to the end
// offsets it has when reading starts (or on and on with follow), calling fn
// for every record, for one-off reads such as the CLI's. It returns fn's
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
			rec, err := envelope.ToRecord(msg)
			msg.Ack()
			if err != nil {
				return err
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
}
