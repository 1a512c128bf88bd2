package kafkatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/messages"
)

func TestThreeBrokerTargetMetadata(t *testing.T) {
	b := SharedThreeBrokerTarget(t)
	if ids := b.Source.NodeIDs(); !slices.Equal(ids, []int32{1}) {
		t.Errorf("source node ids = %v, want [1]", ids)
	}
	c := b.Target
	if ids := c.NodeIDs(); !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Errorf("target node ids = %v, want [1 2 3]", ids)
	}
	if addrs := strings.Split(c.Bootstrap, ","); len(addrs) != 3 || !slices.Equal(addrs, c.Brokers()) {
		t.Errorf("Bootstrap %q, Brokers %v: want the same three addresses", c.Bootstrap, c.Brokers())
	}
	if pids := c.NodePids(); len(pids) != 3 || len(slices.Compact(slices.Sorted(slices.Values(pids)))) != 3 {
		t.Errorf("node pids = %v, want three distinct", pids)
	}
	// Each node must know all three brokers, not only the bootstrap one.
	for _, addr := range c.Brokers() {
		client, err := sarama.NewClient([]string{addr}, c.SaramaConfig())
		if err != nil {
			t.Fatalf("client of %s: %v", addr, err)
		}
		defer client.Close()
		if got := brokerIDs(client); !slices.Equal(got, []int32{1, 2, 3}) {
			t.Errorf("brokers in the metadata of %s = %v, want [1 2 3]", addr, got)
		}
	}
}

// TestThreeBrokerTargetQuorum asks Kafka's own quorum tool for the voters:
// three nodes formatted alone would each lead a quorum of one.
func TestThreeBrokerTargetQuorum(t *testing.T) {
	b := SharedThreeBrokerTarget(t)
	java, err := javaBin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", filepath.Join(b.Lib, "*"),
		"org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", b.Target.Bootstrap, "describe", "--status")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("describe the quorum: %v\n%s", err, out)
	}
	var voters []struct {
		ID int32 `json:"id"`
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, "CurrentVoters:"); ok {
			if err := json.Unmarshal([]byte(strings.TrimSpace(v)), &voters); err != nil {
				t.Fatalf("voters %q: %v", v, err)
			}
		}
	}
	var ids []int32
	for _, v := range voters {
		ids = append(ids, v.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Fatalf("quorum voters = %v, want [1 2 3]; the tool said:\n%s", ids, out)
	}
}

func TestThreeBrokerTargetReplicatesThreeWays(t *testing.T) {
	c := SharedThreeBrokerTarget(t).Target
	topic := UniqueName(t, "rf3")
	c.CreateTopic(t, topic, 3, nil)
	// A commit makes sure __consumer_offsets exists.
	c.CommitOffsets(t, UniqueName(t, "group"), map[messages.TopicPartition]int64{{Topic: topic, Partition: 0}: 0})

	for _, tc := range []struct {
		topic      string
		partitions int
	}{
		{"__consumer_offsets", 6},
		{topic, 3},
	} {
		t.Run(strings.TrimLeft(tc.topic, "_"), func(t *testing.T) {
			metas, err := c.Admin(t).DescribeTopics([]string{tc.topic})
			if err != nil {
				t.Fatalf("describe %s: %v", tc.topic, err)
			}
			if len(metas) != 1 || !errors.Is(metas[0].Err, sarama.ErrNoError) {
				t.Fatalf("describe %s = %+v", tc.topic, metas)
			}
			if len(metas[0].Partitions) != tc.partitions {
				t.Fatalf("%s has %d partitions, want %d", tc.topic, len(metas[0].Partitions), tc.partitions)
			}
			leaders := make(map[int32]bool)
			for _, p := range metas[0].Partitions {
				if len(p.Replicas) != 3 || len(p.Isr) != 3 {
					t.Errorf("%s-%d: replicas %v, in sync %v, want three of each", tc.topic, p.ID, p.Replicas, p.Isr)
				}
				leaders[p.Leader] = true
			}
			if len(leaders) < 2 {
				t.Errorf("%s: every partition led by %v, want the leaders spread", tc.topic, slices.Collect(maps.Keys(leaders)))
			}
		})
	}
}

func TestThreeBrokerTargetSpreadsGroupCoordinators(t *testing.T) {
	client := SharedThreeBrokerTarget(t).Target.Client(t)
	perBroker := make(map[int32]int)
	for i := range 30 {
		group := UniqueName(t, fmt.Sprintf("g%d", i))
		WaitFor(t, 30*time.Second, "coordinator of "+group, func() error {
			coord, err := client.Coordinator(group)
			if err != nil {
				return err
			}
			perBroker[coord.ID()]++
			return nil
		})
	}
	t.Logf("coordinators of 30 groups by broker: %v", perBroker)
	if len(perBroker) < 2 {
		t.Fatalf("coordinators of 30 groups by broker = %v, want at least two brokers", perBroker)
	}
}

// TestThreeBrokerTargetOneNodeDown takes down the coordinator of a group, and
// wants the group's commits and writes to a topic replicated three ways to go
// on, and the node to come back.
func TestThreeBrokerTargetOneNodeDown(t *testing.T) {
	c := SharedThreeBrokerTarget(t).Target
	for _, tc := range []struct {
		name string
		down func(id int32) error
	}{
		{"stop", c.StopNode}, // a controlled shutdown
		{"kill", c.KillNode}, // a crash: the controller fences it after its session times out
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, group := UniqueName(t, "down"), UniqueName(t, "group")
			c.CreateTopic(t, topic, 3, nil)
			client := c.Client(t)
			var victim int32
			WaitFor(t, 30*time.Second, "coordinator of "+group, func() error {
				coord, err := client.Coordinator(group)
				if err == nil {
					victim = coord.ID()
				}
				return err
			})
			c.CommitOffsets(t, group, map[messages.TopicPartition]int64{{Topic: topic, Partition: 0}: 0})
			pidsBefore := c.NodePids()

			if err := tc.down(victim); err != nil {
				t.Fatal(err)
			}
			up := false
			restart := func() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				start := time.Now()
				if err := c.RestartNode(ctx, victim); err != nil {
					t.Fatal(err)
				}
				up = true
				t.Logf("node %d restarted in %s", victim, time.Since(start).Round(time.Millisecond))
			}
			// Other tests share the cluster: bring the node back even if this one fails.
			t.Cleanup(func() {
				if !up {
					restart()
				}
			})

			downAt := time.Now()
			want := make(map[messages.TopicPartition]int64)
			for p := range int32(3) {
				WaitFor(t, time.Minute, fmt.Sprintf("a write to %s-%d with node %d down", topic, p, victim), func() error {
					off, err := produceOne(c, topic, p)
					if err == nil {
						want[messages.TopicPartition{Topic: topic, Partition: p}] = off + 1
					}
					return err
				})
			}
			c.CommitOffsets(t, group, want)
			t.Logf("writes and a commit went through %s after node %d went down", time.Since(downAt).Round(time.Millisecond), victim)
			if got := c.CommittedOffsets(t, group); !maps.Equal(got, want) {
				t.Fatalf("committed with node %d down = %v, want %v", victim, got, want)
			}

			restart()
			if got := brokerIDs(client); !slices.Equal(got, []int32{1, 2, 3}) {
				t.Errorf("brokers after the restart = %v, want [1 2 3]", got)
			}
			if pids := c.NodePids(); pids[victim-1] == pidsBefore[victim-1] {
				t.Errorf("node %d has pid %d before and after the restart", victim, pids[victim-1])
			}
			if got := c.CommittedOffsets(t, group); !maps.Equal(got, want) {
				t.Errorf("committed after the restart = %v, want %v", got, want)
			}
		})
	}
}

// produceOne writes one record to partition p and returns its offset.
func produceOne(c *Cluster, topic string, p int32) (int64, error) {
	producer, err := sarama.NewSyncProducer(c.Brokers(), c.SaramaConfig())
	if err != nil {
		return 0, err
	}
	defer producer.Close()
	_, off, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder("v")})
	return off, err
}

// brokerIDs are the ids of the brokers in fresh metadata, sorted.
func brokerIDs(client sarama.Client) []int32 {
	if err := client.RefreshMetadata(); err != nil {
		return nil
	}
	var ids []int32
	for _, b := range client.Brokers() {
		ids = append(ids, b.ID())
	}
	slices.Sort(ids)
	return ids
}
