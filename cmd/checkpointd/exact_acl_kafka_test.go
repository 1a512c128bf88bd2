package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestExactReadDeniedOnKafka: a principal with the grants translate needs
// but no READ on the mirrored topics gets MM2's translation from
// --exact, with read_denied naming the topic; granted READ, the search runs
// (and here finds the target's records are not the source's: the env's two
// topics were written separately, as after a re-created topic).
func TestExactReadDeniedOnKafka(t *testing.T) {
	t.Parallel()
	s := kafkatest.SharedSecure(t)
	e := newACLEnv(t, s, "offsets-log")
	user := s.AddSCRAMUsers(t, e.src+"-exact")[0]
	group := "app-" + user.User
	tp := messages.TopicPartition{Topic: e.topic, Partition: 0}
	s.CommitOffsets(t, group, map[messages.TopicPartition]int64{tp: 7})
	// MM2's checkpoint for that commit, through the env's sync 5 -> 5.
	cp := messages.Checkpoint{Group: group, TopicPartition: messages.TopicPartition{Topic: e.remote, Partition: 0}, UpstreamOffset: 7, DownstreamOffset: 6}
	produce(t, s.Cluster, e.checkpoints, cp.Key(), cp.Value())

	admin := s.Admin(t)
	allow := func(g grant) {
		t.Helper()
		if err := admin.CreateACLs([]*sarama.ResourceAcls{{
			Resource: sarama.Resource{ResourceType: g.resource, ResourceName: g.name, ResourcePatternType: sarama.AclPatternLiteral},
			Acls:     []*sarama.Acl{{Principal: "User:" + user.User, Host: "*", Operation: g.op, PermissionType: sarama.AclPermissionAllow}},
		}}); err != nil {
			t.Fatalf("grant %v: %v", g, err)
		}
	}
	for _, g := range []grant{
		{sarama.AclResourceTopic, e.syncs, sarama.AclOperationRead},
		{sarama.AclResourceTopic, e.checkpoints, sarama.AclOperationRead},
		{sarama.AclResourceGroup, group, sarama.AclOperationRead},
		{sarama.AclResourceTopic, e.topic, sarama.AclOperationDescribe},
		{sarama.AclResourceTopic, e.remote, sarama.AclOperationDescribe},
	} {
		allow(g)
	}
	props := restrictedConfig(s, user)
	props["source.cluster.alias"], props["target.cluster.alias"] = e.src, e.tgt
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s: %q\n", k, v)
	}
	path := filepath.Join(t.TempDir(), "exact.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	translate := func(t *testing.T) exactOffset {
		t.Helper()
		out, err := runCLI(t, "translate", "--config", path, "--group", group, "--exact", "--format", "json")
		if err != nil {
			t.Fatalf("translate --exact: %v", err)
		}
		var rows []exactOffset
		if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("translate --exact output %q: %v", out, err)
		}
		return rows[0]
	}

	t.Run("without READ", func(t *testing.T) {
		r := translate(t)
		// The source is read first; either topic's name contains e.topic.
		if r.Exact != "read_denied" || !strings.Contains(r.ExactDetail, e.topic) || !strings.Contains(r.ExactDetail, "READ") {
			t.Errorf("exact %q (%s), want read_denied naming READ and the topic %s", r.Exact, r.ExactDetail, e.topic)
		}
		if r.DownstreamOffset != 6 || r.UpstreamOffset != 7 || r.MM2DownstreamOffset != 6 {
			t.Errorf("row %+v, want MM2's checkpoint 7 -> 6 kept", r)
		}
	})
	t.Run("with READ", func(t *testing.T) {
		allow(grant{sarama.AclResourceTopic, e.topic, sarama.AclOperationRead})
		allow(grant{sarama.AclResourceTopic, e.remote, sarama.AclOperationRead})
		r := translate(t)
		if r.Exact != "topic_recreated" || r.DownstreamOffset != 6 {
			t.Errorf("row %+v, want topic_recreated and MM2's 6", r)
		}
	})
}
