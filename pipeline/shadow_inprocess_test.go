package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/handlers/shadow"
	"github.com/checkpointd/checkpointd/internal/testbed/embedded"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/pipeline"
)

// targetState is what a write to the target would change: its topics, the
// end offsets of each, and the offsets of the groups named.
func targetState(t *testing.T, brokers []string, groups ...string) string {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		parts, err := client.Partitions(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			end, err := client.GetOffset(name, p, sarama.OffsetNewest)
			if err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprintf("%s/%d end %d\n", name, p, end)
		}
	}
	for _, g := range groups {
		resp, err := admin.ListConsumerGroupOffsets(g, nil)
		if errors.Is(err, sarama.ErrGroupIDNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for topic, parts := range resp.Blocks {
			for p, b := range parts {
				out += fmt.Sprintf("group %s %s/%d at %d\n", g, topic, p, b.Offset)
			}
		}
	}
	return out
}

// TestShadowOnEmbeddedClusters: in shadow mode the pipeline decides, writes
// nothing to the target (its topics, their end offsets and the group's
// offsets stay as they were), and compares with the checkpoints "MM2"
// writes: ahead, then equal once MM2 catches up (with the time gained),
// then behind with no rule once MM2's checkpoint is planted higher.
func TestShadowOnEmbeddedClusters(t *testing.T) {
	pair := embedded.Start(t)
	orders := pair.Mirror(t, "orders", 5, 5)
	pair.Source.Commit(t, "app", orders, 10)
	// What MM2 and an operator would have made: the checkpoints topic with
	// an older checkpoint, and (admin-poll mode) the shard topic.
	checkpoints := "source.checkpoints.internal"
	pair.Target.CreateTopic(t, checkpoints, 1)
	pair.Target.CreateTopic(t, "source.checkpointd-shards.internal", 50)
	remote := messages.TopicPartition{Topic: "source.orders", Partition: 0}
	mm2 := func(up, down int64) {
		cp := messages.Checkpoint{Group: "app", TopicPartition: remote, UpstreamOffset: up, DownstreamOffset: down}
		pair.Target.Produce(t, checkpoints, 0, cp.Key(), cp.Value())
	}
	mm2(3, 3)
	before := targetState(t, pair.Target.Brokers, "app")

	cfg := embeddedConfig(t, pair, map[string]string{"checkpointd.shadow.enabled": "true"})
	p, err := pipeline.New(t.Context(), cfg, pipeline.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	row := func(want func(shadow.Row) bool) shadow.Row {
		t.Helper()
		var last pipeline.ShadowReport
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			r, ok := p.ShadowReport()
			if !ok {
				t.Fatal("no shadow report from a shadow pipeline")
			}
			last = r
			for _, row := range r.Rows {
				if row.Group == "app" && row.Topic == remote.Topic && want(row) {
					return row
				}
			}
		}
		t.Fatalf("no such row; report %+v", last)
		return shadow.Row{}
	}
	// The sync 5 -> 5 translates the commit at 10 to 6, MM2 says 3.
	r := row(func(r shadow.Row) bool { return r.Status == shadow.Ahead })
	if r.Checkpointd != 6 || r.MM2 != 3 || r.AheadBy != 3 {
		t.Errorf("ahead row %+v, want checkpointd 6, mm2 3", r)
	}
	time.Sleep(200 * time.Millisecond)
	mm2(10, 6)
	r = row(func(r shadow.Row) bool { return r.Status == shadow.Equal })
	if r.EarlierSeconds == nil || *r.EarlierSeconds <= 0.1 {
		t.Errorf("equal row %+v: checkpointd decided 6 at least 0.2 s before MM2 wrote it", r)
	}
	mm2(10, 9) // planted: MM2 translating the same commit higher
	r = row(func(r shadow.Row) bool { return r.Status == shadow.Behind })
	if !r.Unexplained || r.Reason != shadow.ReasonLowerTranslation {
		t.Errorf("planted row %+v: want unexplained %s", r, shadow.ReasonLowerTranslation)
	}

	rep, _ := p.ShadowReport()
	if rep.Withheld["checkpoint"] < 1 || rep.Counts.Unexplained != 1 {
		t.Errorf("report counts %+v withheld %v", rep.Counts, rep.Withheld)
	}
	// Give the pipeline a few commit intervals (1 s) to write, if it would.
	time.Sleep(2500 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	done <- nil
	after := targetState(t, pair.Target.Brokers, "app")
	// The only change: the test's own two MM2 records.
	want := strings.Replace(before, checkpoints+"/0 end 1", checkpoints+"/0 end 3", 1)
	if after != want || want == before {
		t.Errorf("the target changed in shadow mode:\nbefore, plus the test's 2 records\n%s\nafter\n%s", want, after)
	}
	var shown []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.Contains(l, "shards.internal") {
			shown = append(shown, l)
		}
	}
	t.Logf("target after (shard topic left out):\n%s", strings.Join(shown, "\n"))
}

// TestShadowCreatesNoTopic: started before MM2 created the checkpoints
// topic (and, in admin-poll mode, without the shard topic), shadow mode
// creates neither and counts both as withheld.
func TestShadowCreatesNoTopic(t *testing.T) {
	pair := embedded.Start(t)
	orders := pair.Mirror(t, "orders", 5, 5)
	pair.Source.Commit(t, "app", orders, 10)
	before := targetState(t, pair.Target.Brokers)
	cfg := embeddedConfig(t, pair, map[string]string{"checkpointd.shadow.enabled": "true"})
	p, err := pipeline.New(t.Context(), cfg, pipeline.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	time.Sleep(2 * time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if after := targetState(t, pair.Target.Brokers); after != before {
		t.Errorf("target changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	if rep, _ := p.ShadowReport(); rep.Withheld["topic"] != 2 {
		t.Errorf("withheld %v, want the checkpoints and the shard topic", rep.Withheld)
	}
}
