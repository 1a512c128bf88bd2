package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/kafkalog"
	"github.com/checkpointd/checkpointd/internal/service"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/envelope"
)

// inspectedRecord is one decoded record, as `checkpointd inspect` prints it.
type inspectedRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Kind      string `json:"kind"`
	Decoded   any    `json:"decoded,omitempty"`
	Error     string `json:"error,omitempty"`
	KeyHex    string `json:"key_hex,omitempty"`
	ValueHex  string `json:"value_hex,omitempty"`
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf service.ConfigFlags
	cf.Register(fs)
	topicFlag := fs.String("topic", "", "offset-syncs, checkpoints, consumer-offsets, or a topic name")
	cluster := fs.String("cluster", "", "source or target (default: where the named topic lives)")
	follow := fs.Bool("follow", false, "keep printing new records")
	limit := fs.Int("limit", 0, "stop after this many records (0: no limit)")
	raw := fs.Bool("raw", false, "also print key and value bytes in hex")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := cf.Load(stderr)
	if err != nil {
		return err
	}
	topic, onTarget, decode, err := inspectTarget(cfg, *topicFlag)
	if err != nil {
		return err
	}
	switch *cluster {
	case "":
	case "source":
		onTarget = false
	case "target":
		onTarget = true
	default:
		return fmt.Errorf("--cluster %q: want source or target", *cluster)
	}
	role, brokers, alias := config.SourceConsumer, cfg.Source.BootstrapServers, cfg.SourceAlias
	if onTarget {
		role, brokers, alias = config.TargetConsumer, cfg.Target.BootstrapServers, cfg.TargetAlias
	}
	sc, err := cfg.SaramaConfig(role)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	enc := json.NewEncoder(stdout)
	n := 0
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rc := kafkalog.ReaderConfig{Brokers: brokers, Sarama: sc, Cluster: alias, Logger: logger}
	err = kafkalog.ReadLog(ctx, rc, topic, *follow, func(r envelope.Record) error {
		out := inspectedRecord{Partition: r.Partition, Offset: r.Offset}
		out.Kind, out.Decoded, err = decode(r)
		if err != nil {
			out.Error = err.Error()
		}
		if *raw || err != nil {
			out.KeyHex, out.ValueHex = hex.EncodeToString(r.Key), hex.EncodeToString(r.Value)
		}
		n++
		if err := enc.Encode(out); err != nil {
			return err
		}
		if *limit > 0 && n >= *limit {
			cancel()
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

type decoder func(envelope.Record) (kind string, decoded any, err error)

// inspectTarget resolves a --topic name to the topic, its cluster and decoder.
func inspectTarget(cfg *config.Config, name string) (topic string, onTarget bool, dec decoder, err error) {
	switch name {
	case "offset-syncs":
		syncs := cfg.OffsetSyncs()
		return syncs.Topic, syncs.OnTarget, decodeSync, nil
	case "checkpoints":
		return cfg.Policy.CheckpointsTopic(cfg.SourceAlias), true, decodeCheckpoint, nil
	case "consumer-offsets", "__consumer_offsets":
		return kafkalog.ConsumerOffsetsTopic, false, decodeOffsets, nil
	case "":
		return "", false, nil, fmt.Errorf("--topic is required: offset-syncs, checkpoints, consumer-offsets or a topic name")
	}
	switch {
	case cfg.Policy.IsCheckpointsTopic(name):
		return name, true, decodeCheckpoint, nil
	case cfg.Policy.IsHeartbeatsTopic(name):
		return name, true, decodeHeartbeat, nil
	}
	return name, false, decodeSync, nil
}

func decodeSync(r envelope.Record) (string, any, error) {
	if r.Tombstone() {
		return "tombstone", nil, nil
	}
	s, err := messages.DecodeOffsetSync(r.Key, r.Value)
	return "offset_sync", s, err
}

func decodeCheckpoint(r envelope.Record) (string, any, error) {
	if r.Tombstone() {
		return "tombstone", nil, nil
	}
	c, err := messages.DecodeCheckpoint(r.Key, r.Value)
	return "checkpoint", c, err
}

func decodeHeartbeat(r envelope.Record) (string, any, error) {
	if r.Tombstone() {
		return "tombstone", nil, nil
	}
	h, err := messages.DecodeHeartbeat(r.Key, r.Value)
	return "heartbeat", h, err
}

func decodeOffsets(r envelope.Record) (string, any, error) {
	var value []byte
	if !r.Tombstone() {
		value = r.Value
	}
	rec, err := messages.DecodeOffsetsRecord(r.Key, value)
	return rec.Kind.String(), rec, err
}
