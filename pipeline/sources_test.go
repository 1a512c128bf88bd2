package pipeline_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/pipeline"
)

// With checkpointd.commit.source=auto and a source cluster that refuses
// connections, New fails naming the source and the refused connection; it
// does not log a choice of mode first, as if __consumer_offsets were merely
// unreadable.
func TestAutoModeReportsAnUnreachableSource(t *testing.T) {
	target, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(target.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now

	cfg, _, err := config.FromProperties(map[string]string{
		"source.cluster.alias":                 "eu",
		"target.cluster.alias":                 "us",
		"source.cluster.bootstrap.servers":     closed,
		"target.cluster.bootstrap.servers":     strings.Join(target.ListenAddrs(), ","),
		"checkpoints.topic.replication.factor": "1",
		"checkpointd.commit.source":            "auto",
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pipeline.New(ctx, cfg, pipeline.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err == nil {
		t.Fatal("New succeeded with a source cluster that refuses connections")
	}
	t.Logf("New: %v", err)
	msg := err.Error()
	if !strings.Contains(msg, `source cluster "eu"`) || !strings.Contains(msg, "connection refused") {
		t.Errorf("New: %v; want it to name the source cluster and the refused connection", err)
	}
	for _, mode := range []string{"polling group offsets instead", "mode=admin-poll", "commit source"} {
		if strings.Contains(logs.String(), mode) {
			t.Errorf("logged a mode decision (%q) for an unreachable source:\n%s", mode, logs.String())
		}
	}
}
