package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// TestReadyNamesStageWithACLRevoked runs checkpointd with the least ACLs
// (offsets-log mode, syncing target groups) on the secured cluster, waits
// until it is ready and has synced a group, then revokes one ACL at a time
// (WRITE on the checkpoints topic, READ on the group sharing
// __consumer_offsets, which also shards the commit stage):
// /readyz turns 503 naming the stage that lost it once the stage has failed
// for checkpointd.health.stage.failure.timeout.ms, and 200 again when the
// ACL is back.
func TestReadyNamesStageWithACLRevoked(t *testing.T) {
	t.Parallel()
	s := kafkatest.SharedSecure(t)
	e := newACLEnv(t, s, "offsets-log")
	user := s.AddSCRAMUsers(t, e.src+"-ready")[0]
	group, gid := "app-"+user.User, "checkpointd-"+user.User
	tp := messages.TopicPartition{Topic: e.topic, Partition: 0}
	s.CommitOffsets(t, group, map[messages.TopicPartition]int64{tp: 5})
	admin := s.Admin(t)
	grants := e.leastGrants(gid, group)
	allow := func(g grant) error {
		return admin.CreateACLs([]*sarama.ResourceAcls{{
			Resource: sarama.Resource{ResourceType: g.resource, ResourceName: g.name, ResourcePatternType: sarama.AclPatternLiteral},
			Acls:     []*sarama.Acl{{Principal: "User:" + user.User, Host: "*", Operation: g.op, PermissionType: sarama.AclPermissionAllow}},
		}})
	}
	revoke := func(g grant) error {
		principal, host := "User:"+user.User, "*"
		_, err := admin.DeleteACL(sarama.AclFilter{
			ResourceType: g.resource, ResourceName: &g.name, ResourcePatternTypeFilter: sarama.AclPatternLiteral,
			Principal: &principal, Host: &host, Operation: g.op, PermissionType: sarama.AclPermissionAllow,
		}, false)
		return err
	}
	for _, g := range grants {
		if err := allow(g); err != nil {
			t.Fatalf("grant %v: %v", g, err)
		}
	}

	props := restrictedConfig(s, user)
	props["source.cluster.alias"], props["target.cluster.alias"] = e.src, e.tgt
	for k, v := range map[string]string{
		"groups": group, "checkpoints.topic.replication.factor": "1", "sync.group.offsets.enabled": "true",
		"sync.group.offsets.interval.seconds": "1", "checkpointd.group.id": gid, "checkpointd.commit.source": e.mode,
		"checkpointd.metrics.address": "127.0.0.1:0", "admin.timeout.ms": "3000",
		"checkpointd.health.stage.failure.timeout.ms": "2000",
	} {
		props[k] = v
	}
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s: %q\n", k, v)
	}
	path := filepath.Join(t.TempDir(), "ready.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- dispatch(ctx, []string{"run", "--config", path}, &stdout, &stderr) }()
	defer func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("checkpointd's log:\n%s", lastLines(stderr.String(), 60))
		}
	}()

	addr := regexp.MustCompile(`serving metrics and health.* address=(127\.0\.0\.1:\d+)`)
	var base string
	readyz := func() (int, string) {
		client := http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	await := func(what string, timeout time.Duration, cond func() error) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			err := cond()
			if err == nil {
				return
			}
			select {
			case err := <-done:
				t.Fatalf("checkpointd ended waiting for %s: %v", what, err)
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting %v for %s: %v", timeout, what, err)
			}
		}
	}
	await("the health server", 30*time.Second, func() error {
		m := addr.FindStringSubmatch(stderr.String())
		if m == nil {
			return fmt.Errorf("no address logged")
		}
		base = "http://" + m[1]
		return nil
	})
	remote := messages.TopicPartition{Topic: e.remote, Partition: 0}
	synced := func(want int64) func() error {
		return func() error {
			if got := s.CommittedOffsets(t, group)[remote]; got != want {
				return fmt.Errorf("target group at %d, want %d", got, want)
			}
			if code, body := readyz(); code != http.StatusOK {
				return fmt.Errorf("/readyz = %d %q", code, body)
			}
			return nil
		}
	}
	await("the target group synced and /readyz 200", 60*time.Second, synced(5))

	// The offset sync is 5 -> 5: a source commit at c > 5 translates to 6.
	commit := int64(5)
	for _, tc := range []struct {
		stage, cluster string
		g              grant
	}{
		{"checkpoint publisher", "target " + strconv.Quote(e.tgt), grant{sarama.AclResourceTopic, e.checkpoints, sarama.AclOperationWrite}},
		{"source commit reader", "source " + strconv.Quote(e.src), grant{sarama.AclResourceGroup, gid, sarama.AclOperationRead}},
	} {
		if err := revoke(tc.g); err != nil {
			t.Fatalf("revoke %v: %v", tc.g, err)
		}
		revoked := time.Now()
		commit++
		s.CommitOffsets(t, group, map[messages.TopicPartition]int64{tp: commit})
		want := fmt.Sprintf("stage %s on cluster %s", tc.stage, tc.cluster)
		var body string
		await("/readyz 503 naming "+tc.stage, 45*time.Second, func() error {
			var code int
			code, body = readyz()
			if code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
				return fmt.Errorf("/readyz = %d %q", code, body)
			}
			return nil
		})
		t.Logf("without %v: 503 after %v: %s", tc.g, time.Since(revoked).Round(100*time.Millisecond), body)
		if err := allow(tc.g); err != nil {
			t.Fatalf("grant %v again: %v", tc.g, err)
		}
		regranted := time.Now()
		await("/readyz 200 with "+tc.g.String()+" back", 60*time.Second, synced(6))
		t.Logf("with %v back: ready after %v", tc.g, time.Since(regranted).Round(100*time.Millisecond))
	}
}
