package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestActiveActive runs real MirrorMaker 2 replicating two clusters into each
// other (A->B and B->A, DefaultReplicationPolicy) and one `checkpointd run`
// process with an MM2 driver file enabling both flows and syncing group
// offsets. A group consuming orders on A gets its checkpoints in
// A.checkpoints.internal on B and its group on B at the translated offsets of
// A.orders; a group consuming payments on B likewise on A. Nothing loops: the
// group offsets checkpointd commits on one cluster (a commit like any other
// there) are not checkpointed back, no topic is replicated back (B.A.orders),
// and each cluster's groups are only in its own checkpoints topic. /readyz
// and the metrics name both flows.
func TestActiveActive(t *testing.T) {
	t.Parallel()
	bed := kafkatest.Shared(t)
	bin := buildBinary(t)

	// Aliases of the test's own keep its remote, offset-syncs and checkpoints
	// topics apart from the other tests' on the shared clusters.
	suffix := kafkatest.UniqueName(t, "")
	suffix = suffix[len(suffix)-8:]
	a, b := "aa"+suffix, "bb"+suffix
	orders, payments := "orders-"+suffix, "payments-"+suffix
	ordersGroup, paymentsGroup := "ga-"+suffix, "gb-"+suffix
	const partitions = 2
	bed.Source.CreateTopic(t, orders, partitions, nil)
	bed.Target.CreateTopic(t, payments, partitions, nil)
	// Each group commits at the end of its topic: MM2 writes an offset sync
	// for a partition's last record at its next flush (whichever syncs it
	// left out before), so those commits translate exactly.
	const ordersEnd, paymentsEnd = 20, 15
	for p := range int32(partitions) {
		bed.Source.Produce(t, orders, p, ordersEnd)
		bed.Target.Produce(t, payments, p, paymentsEnd)
	}

	start := time.Now()
	mm2 := bed.StartMM2(t, kafkatest.MM2Options{
		SourceAlias: a, TargetAlias: b, BothWays: true,
		Topics: orders + "," + payments,
	})
	mm2.WaitReplicated(t, orders)
	mm2.WaitReplicatedBack(t, payments)
	t.Logf("MM2 both ways ready and replicated in %v", time.Since(start).Round(time.Millisecond))

	// A consumer of orders on A and one of payments on B, each at its end.
	commit := func(c *kafkatest.Cluster, group, topic string, offset int64) {
		offsets := map[messages.TopicPartition]int64{}
		for p := range int32(partitions) {
			offsets[messages.TopicPartition{Topic: topic, Partition: p}] = offset
		}
		c.CommitOffsets(t, group, offsets)
	}
	commit(bed.Source, ordersGroup, orders, ordersEnd)
	commit(bed.Target, paymentsGroup, payments, paymentsEnd)

	props := map[string]string{
		"clusters":                             a + ", " + b,
		a + ".bootstrap.servers":               bed.Source.Bootstrap,
		b + ".bootstrap.servers":               bed.Target.Bootstrap,
		a + "->" + b + ".enabled":              "true",
		b + "->" + a + ".enabled":              "true",
		"groups":                               "g[ab]-" + suffix,
		"sync.group.offsets.enabled":           "true",
		"sync.group.offsets.interval.seconds":  "1",
		"checkpoints.topic.replication.factor": "1",
		"replication.policy.class":             "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
	}
	started := time.Now()
	p := startProc(t, bin, "cpd", props)
	p.waitReady(t, 90*time.Second)
	t.Logf("checkpointd ready with both flows in %v", time.Since(started).Round(time.Millisecond))

	ready := httpGet(t, "http://"+p.addr+"/readyz")
	for _, flow := range []string{a + "->" + b + ": ready (stages: ", b + "->" + a + ": ready (stages: "} {
		if !strings.Contains(ready, "\n"+flow) {
			t.Errorf("/readyz lacks %q:\n%s", flow, ready)
		}
	}
	if !strings.Contains(ready, "offset-syncs reader on source") {
		t.Errorf("/readyz names no stage:\n%s", ready)
	}

	// Each group on the other cluster, at its offsets translated through
	// MM2's offset syncs.
	want := func(topic string, offset int64) map[messages.TopicPartition]int64 {
		out := map[messages.TopicPartition]int64{}
		for p := range int32(partitions) {
			out[messages.TopicPartition{Topic: topic, Partition: p}] = offset
		}
		return out
	}
	waitGroup := func(c *kafkatest.Cluster, group string, offsets map[messages.TopicPartition]int64) {
		kafkatest.WaitFor(t, 60*time.Second, fmt.Sprintf("group %s on %s at %v", group, c.Alias, offsets), func() error {
			if got := c.CommittedOffsets(t, group); !maps.Equal(got, offsets) {
				return fmt.Errorf("offsets %v", got)
			}
			return nil
		})
	}
	waitGroup(bed.Target, ordersGroup, want(a+"."+orders, ordersEnd))
	waitGroup(bed.Source, paymentsGroup, want(b+"."+payments, paymentsEnd))
	t.Logf("both groups synced %v after checkpointd started", time.Since(started).Round(time.Millisecond))

	// The commits checkpointd made (ordersGroup on B, paymentsGroup on A) are
	// commits on those clusters like any other, read by the other flow; give
	// it time to (wrongly) checkpoint them back, and MM2 time to (wrongly)
	// replicate a remote topic back.
	time.Sleep(5 * time.Second)

	checkpoints := func(c *kafkatest.Cluster, topic string) map[string][]messages.Checkpoint {
		out := map[string][]messages.Checkpoint{}
		for _, m := range c.ReadAll(t, topic) {
			cp, err := messages.DecodeCheckpoint(m.Key, m.Value)
			if err != nil {
				t.Errorf("%s offset %d: %v", topic, m.Offset, err)
				continue
			}
			if strings.HasSuffix(cp.Group, suffix) {
				out[cp.Group] = append(out[cp.Group], cp)
			}
		}
		return out
	}
	// A checkpoint names the topic on the target: the remote topic, or for a
	// topic that came from the target (a loop back), its original name.
	check := func(c *kafkatest.Cluster, topic, group, remote string, offset int64) {
		byGroup := checkpoints(c, topic)
		if groups := slices.Sorted(maps.Keys(byGroup)); !slices.Equal(groups, []string{group}) {
			t.Errorf("%s on %s has checkpoints of groups %v, want only %s", topic, c.Alias, groups, group)
		}
		last := map[int32]messages.Checkpoint{}
		for _, cp := range byGroup[group] {
			if cp.TopicPartition.Topic != remote {
				t.Errorf("%s on %s: checkpoint of %s for topic %s, want only %s", topic, c.Alias, group, cp.TopicPartition.Topic, remote)
			}
			last[cp.TopicPartition.Partition] = cp
		}
		for p := range int32(partitions) {
			if cp, ok := last[p]; !ok || cp.UpstreamOffset != offset || cp.DownstreamOffset != offset {
				t.Errorf("%s on %s: last checkpoint of %s partition %d = %+v, want %d -> %d", topic, c.Alias, group, p, cp, offset, offset)
			}
		}
	}
	check(bed.Target, a+".checkpoints.internal", ordersGroup, a+"."+orders, ordersEnd)
	check(bed.Source, b+".checkpoints.internal", paymentsGroup, b+"."+payments, paymentsEnd)

	// No loop: neither remote topic went back where it came from, and no
	// group was committed on a topic back to its own cluster.
	for _, tc := range []struct {
		c     *kafkatest.Cluster
		topic string
	}{{bed.Source, b + "." + a + "." + orders}, {bed.Target, a + "." + b + "." + payments}} {
		topics, err := tc.c.Admin(t).ListTopics()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := topics[tc.topic]; ok {
			t.Errorf("%s exists on %s: a remote topic was replicated back", tc.topic, tc.c.Alias)
		}
	}
	if got := bed.Source.CommittedOffsets(t, ordersGroup); !maps.Equal(got, want(orders, ordersEnd)) {
		t.Errorf("%s on %s (its own cluster) = %v, want its own commits only", ordersGroup, a, got)
	}
	if got := bed.Target.CommittedOffsets(t, paymentsGroup); !maps.Equal(got, want(payments, paymentsEnd)) {
		t.Errorf("%s on %s (its own cluster) = %v, want its own commits only", paymentsGroup, b, got)
	}

	// One metrics server; each flow's series carry its source and target.
	scrape := httpGet(t, "http://"+p.addr+"/metrics")
	for _, series := range []string{
		fmt.Sprintf(`checkpointd_gate_open{source=%q,target=%q} 1`, a, b),
		fmt.Sprintf(`checkpointd_gate_open{source=%q,target=%q} 1`, b, a),
		fmt.Sprintf(`checkpointd_target_commits_total{group=%q,reason="committed",source=%q,target=%q}`, ordersGroup, a, b),
		fmt.Sprintf(`checkpointd_target_commits_total{group=%q,reason="committed",source=%q,target=%q}`, paymentsGroup, b, a),
	} {
		if !strings.Contains(scrape, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	if n := strings.Count(scrape, "\ngo_goroutines "); n != 1 {
		t.Errorf("go_goroutines appears %d times, want once", n)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestOneFlowFailingToStartNamesIt: of two flows, the one whose target
// cannot be reached stops the process, named in the error, and the one that
// started stops with it.
func TestOneFlowFailingToStartNamesIt(t *testing.T) {
	t.Parallel()
	bed := kafkatest.Shared(t)
	suffix := kafkatest.UniqueName(t, "")
	suffix = suffix[len(suffix)-8:]
	a, b, c := "aa"+suffix, "bb"+suffix, "cc"+suffix
	path := filepath.Join(t.TempDir(), "mm2.properties")
	file := fmt.Sprintf("clusters = %[1]s, %[2]s, %[3]s\n%[1]s.bootstrap.servers = %[4]s\n%[2]s.bootstrap.servers = %[5]s\n"+
		// Port 1 on the loopback refuses at once.
		"%[3]s.bootstrap.servers = 127.0.0.1:1\n%[1]s->%[2]s.enabled = true\n%[1]s->%[3]s.enabled = true\n"+
		"checkpoints.topic.replication.factor = 1\ncheckpointd.metrics.address = 127.0.0.1:0\n",
		a, b, c, bed.Source.Bootstrap, bed.Target.Bootstrap)
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := dispatch(ctx, []string{"run", "--config", path}, &stdout, &stderr)
	if want := "flow " + a + "->" + c + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("run error = %v, want it to start with %q\n%s", err, want, stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatal("run did not stop by itself")
	}
	t.Logf("run: %v", err)
}
