package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/handlers/shadow"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestShadowWithReadOnlyACLs runs checkpointd in shadow mode, syncing
// target groups, as a principal that may only read: no WRITE, CREATE,
// ALTER or IDEMPOTENT_WRITE anywhere (the secured cluster is both source
// and target). It decides, compares with the "MM2" checkpoints an admin
// writes (ahead, then equal), stays ready with no stage failing, logs no
// authorization error, and the checkpoints topic holds only the admin's
// records.
func TestShadowWithReadOnlyACLs(t *testing.T) {
	t.Parallel()
	s := kafkatest.SharedSecure(t)
	name := kafkatest.UniqueName(t, "")
	suffix := name[len(name)-8:]
	src, tgt, topic := "shsrc"+suffix, "shtgt"+suffix, "orders-"+suffix
	remote := src + "." + topic
	syncs, checkpoints := "mm2-offset-syncs."+tgt+".internal", src+".checkpoints.internal"
	compact := map[string]string{"cleanup.policy": "compact"}
	s.CreateTopic(t, topic, 1, nil)
	s.CreateTopic(t, remote, 1, nil)
	s.CreateTopic(t, syncs, 1, compact)
	s.CreateTopic(t, checkpoints, 1, compact)
	s.Produce(t, topic, 0, 10)
	s.Produce(t, remote, 0, 10)
	sync := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: topic}, UpstreamOffset: 5, DownstreamOffset: 5}
	produce(t, s.Cluster, syncs, sync.Key(), sync.Value())
	remoteTP := messages.TopicPartition{Topic: remote}
	user := s.AddSCRAMUsers(t, src+"-shadow")[0]
	group, gid := "app-"+user.User, "checkpointd-"+user.User
	writeMM2 := func(up, down int64) {
		cp := messages.Checkpoint{Group: group, TopicPartition: remoteTP, UpstreamOffset: up, DownstreamOffset: down}
		produce(t, s.Cluster, checkpoints, cp.Key(), cp.Value())
	}
	writeMM2(3, 3)
	s.CommitOffsets(t, group, map[messages.TopicPartition]int64{{Topic: topic}: 8})
	// One cluster is source and target: the same group's offset on the
	// remote topic is its target offset, read with DESCRIBE only.
	s.CommitOffsets(t, group, map[messages.TopicPartition]int64{remoteTP: 4})

	// Read-only: what production needs (docs/operations.md) without any
	// WRITE, CREATE or commit, and the target group only described.
	grants := []grant{
		{sarama.AclResourceTopic, syncs, sarama.AclOperationRead},
		{sarama.AclResourceTopic, checkpoints, sarama.AclOperationRead},
		{sarama.AclResourceTopic, "__consumer_offsets", sarama.AclOperationRead},
		{sarama.AclResourceGroup, gid, sarama.AclOperationRead},
		{sarama.AclResourceGroup, group, sarama.AclOperationDescribe},
		{sarama.AclResourceTopic, remote, sarama.AclOperationDescribe},
	}
	var acls []*sarama.ResourceAcls
	for _, g := range grants {
		acls = append(acls, &sarama.ResourceAcls{
			Resource: sarama.Resource{ResourceType: g.resource, ResourceName: g.name, ResourcePatternType: sarama.AclPatternLiteral},
			Acls:     []*sarama.Acl{{Principal: "User:" + user.User, Host: "*", Operation: g.op, PermissionType: sarama.AclPermissionAllow}},
		})
	}
	if err := s.Admin(t).CreateACLs(acls); err != nil {
		t.Fatalf("grant %v: %v", grants, err)
	}
	endBefore := s.EndOffsets(t, checkpoints)[0]

	props := restrictedConfig(s, user)
	props["source.cluster.alias"], props["target.cluster.alias"] = src, tgt
	for k, v := range map[string]string{
		"groups": group, "topics": topic, "checkpoints.topic.replication.factor": "1", "sync.group.offsets.enabled": "true",
		"sync.group.offsets.interval.seconds": "1", "checkpointd.group.id": gid, "checkpointd.commit.source": "offsets-log",
		"checkpointd.metrics.address": "127.0.0.1:0", "admin.timeout.ms": "3000",
		"checkpointd.health.stage.failure.timeout.ms": "2000",
	} {
		props[k] = v
	}
	run := startShadow(t, props)
	row := func(what string, want func(shadow.Row) error) {
		t.Helper()
		run.await(t, what, 60*time.Second, func() error {
			rep, _ := run.report(t)
			if len(rep.Rows) != 1 {
				return fmt.Errorf("report %+v", rep)
			}
			return want(rep.Rows[0])
		})
	}
	// The sync 5 -> 5 translates the commit at 8 to 6.
	row("checkpointd ahead of the old checkpoint", func(r shadow.Row) error {
		if r.Status != shadow.Ahead || r.Checkpointd != 6 || r.MM2 != 3 {
			return fmt.Errorf("row %+v", r)
		}
		return nil
	})
	writeMM2(8, 6)
	row("agreement", func(r shadow.Row) error {
		if r.Status != shadow.Equal || r.EarlierSeconds == nil || r.Target != 4 {
			return fmt.Errorf("row %+v", r)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // past the 2 s stage failure timeout
	readyz := func() (int, string) {
		resp, err := http.Get(run.base + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Errorf("/readyz = %d %q", code, body)
	}
	out, err := run.table(t)
	if err != nil {
		t.Errorf("shadow-report: %v\n%s", err, out)
	}
	t.Logf("shadow-report as a read-only principal:\n%s", out)
	if log := run.stderr.String(); strings.Contains(log, "not authorized") || strings.Contains(log, "authorization") {
		t.Errorf("an authorization error in the log:\n%s", lastLines(log, 40))
	}
	if end := s.EndOffsets(t, checkpoints)[0]; end != endBefore+1 {
		t.Errorf("checkpoints topic end %d, want %d (the test's one record after the grants)", end, endBefore+1)
	}
}
