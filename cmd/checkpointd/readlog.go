package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// readLog reads topic from its oldest offset to the end offsets it has when
// reading starts (or on and on with follow), calling fn for every record.
func readLog(ctx context.Context, brokers []string, cfg *sarama.Config, cluster, topic string, follow bool,
	logger *slog.Logger, fn func(envelope.Record) error) error {
	reader, err := kafkalog.NewLogReader(kafkalog.LogReaderConfig{
		ReaderConfig: kafkalog.ReaderConfig{Brokers: brokers, Sarama: cfg, Cluster: cluster, Logger: logger},
	})
	if err != nil {
		return err
	}
	defer reader.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, err := reader.Subscribe(ctx, topic)
	if err != nil {
		return fmt.Errorf("read %s on cluster %s: %w", topic, cluster, err)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case msg, ok := <-msgs:
			if !ok {
				return fmt.Errorf("reading %s on cluster %s ended early", topic, cluster)
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
