package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

// applyBed is a target topic with records on two partitions and a config
// pointing translate at the shared clusters.
type applyBed struct {
	bed     *kafkatest.Bed
	cfgPath string
	p0, p1  messages.TopicPartition // partitions of the remote topic on the target
}

func newApplyBed(t *testing.T) *applyBed {
	t.Helper()
	bed := kafkatest.Shared(t)
	remote := bed.RemoteTopic(kafkatest.UniqueName(t, "orders"))
	bed.Target.CreateTopic(t, remote, 2, nil)
	// Offsets up to 100 exist, so Kafka's own reset tool keeps them as they are.
	bed.Target.Produce(t, remote, 0, 100)
	bed.Target.Produce(t, remote, 1, 100)
	bed.Target.EnsureTopic(t, bed.CheckpointsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	return &applyBed{bed: bed, cfgPath: writeConfig(t, bed),
		p0: messages.TopicPartition{Topic: remote, Partition: 0}, p1: messages.TopicPartition{Topic: remote, Partition: 1}}
}

// checkpoint writes MM2-format checkpoints, as MM2 or the service would, for
// group: the downstream offsets given, the upstream ones twice as far.
func (a *applyBed) checkpoint(t *testing.T, group string, downstream map[messages.TopicPartition]int64) {
	t.Helper()
	cfg := a.bed.Target.SaramaConfig()
	cfg.Producer.Return.Successes = true
	p, err := sarama.NewSyncProducer([]string{a.bed.Target.Bootstrap}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for tp, off := range downstream {
		cp := messages.Checkpoint{Group: group, TopicPartition: tp, UpstreamOffset: 2 * off, DownstreamOffset: off,
			Metadata: fmt.Sprintf("m%d", tp.Partition)}
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: a.bed.CheckpointsTopic(), Partition: 0,
			Key: sarama.ByteEncoder(cp.Key()), Value: sarama.ByteEncoder(cp.Value())}); err != nil {
			t.Fatal(err)
		}
	}
}

// translated returns what `checkpointd translate --group group` prints.
func (a *applyBed) translated(t *testing.T, group string) map[messages.TopicPartition]int64 {
	t.Helper()
	out, err := runCLI(t, "translate", "--config", a.cfgPath, "--group", group, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []translatedOffset
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("translate output %q: %v", out, err)
	}
	got := map[messages.TopicPartition]int64{}
	for _, r := range rows {
		got[messages.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.DownstreamOffset
	}
	return got
}

// applyRows runs translate --apply with args and returns its rows by group
// and partition, and the command's error.
func (a *applyBed) apply(t *testing.T, args ...string) (map[string]appliedOffset, error) {
	t.Helper()
	out, err := runCLI(t, append([]string{"translate", "--config", a.cfgPath, "--apply", "--format", "json"}, args...)...)
	if out == "" {
		return nil, err
	}
	var rows []appliedOffset
	if jerr := json.Unmarshal([]byte(out), &rows); jerr != nil {
		t.Fatalf("translate --apply output %q: %v", out, jerr)
	}
	got := map[string]appliedOffset{}
	for _, r := range rows {
		got[fmt.Sprintf("%s/%d", r.Group, r.Partition)] = r
	}
	return got, err
}

// TestTranslateApplyOnKafka: --apply shows the plan and changes nothing;
// --apply --execute commits into idle groups, leaves an active group alone
// and never lowers a group that is ahead, and fails while any partition
// could not be committed.
func TestTranslateApplyOnKafka(t *testing.T) {
	a := newApplyBed(t)
	idle, active, ahead := kafkatest.UniqueName(t, "idle"), kafkatest.UniqueName(t, "active"), kafkatest.UniqueName(t, "ahead")
	translation := map[messages.TopicPartition]int64{a.p0: 21, a.p1: 40}
	for _, g := range []string{idle, active, ahead} {
		a.checkpoint(t, g, translation)
	}
	a.bed.Target.CommitOffsets(t, ahead, map[messages.TopicPartition]int64{a.p0: 90, a.p1: 5})
	a.bed.Target.CommitOffsets(t, active, map[messages.TopicPartition]int64{a.p0: 3, a.p1: 4})
	joinTarget(t, a.bed.Target, active, a.p0.Topic)

	before := map[string]map[messages.TopicPartition]int64{}
	for _, g := range []string{idle, active, ahead} {
		before[g] = a.bed.Target.CommittedOffsets(t, g)
	}
	cur := func(v int64) *int64 { return &v }
	type row struct {
		current *int64
		action  string
		reason  string
	}
	check := func(t *testing.T, got map[string]appliedOffset, want map[string]row) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%d rows, want %d: %+v", len(got), len(want), got)
		}
		for k, w := range want {
			g, ok := got[k]
			switch {
			case !ok:
				t.Errorf("no row for %s", k)
			case g.Action != w.action || g.Reason != w.reason || (g.CurrentOffset == nil) != (w.current == nil) ||
				(w.current != nil && *g.CurrentOffset != *w.current):
				t.Errorf("%s: action %s reason %q current %s, want action %s reason %q current %s",
					k, g.Action, g.Reason, offsetString(g.CurrentOffset), w.action, w.reason, offsetString(w.current))
			}
			if want := translation[messages.TopicPartition{Topic: a.p0.Topic, Partition: g.Partition}]; ok && g.TranslatedOffset != want {
				t.Errorf("%s: translated %d, want %d", k, g.TranslatedOffset, want)
			}
		}
	}
	unchanged := func(t *testing.T, groups ...string) {
		t.Helper()
		for _, g := range groups {
			if got := a.bed.Target.CommittedOffsets(t, g); !maps.Equal(got, before[g]) {
				t.Errorf("group %s on the target moved: %v, was %v", g, got, before[g])
			}
		}
	}
	groups := []string{"--group", idle, "--group", active, "--group", ahead}

	t.Run("dry run changes nothing", func(t *testing.T) {
		got, err := a.apply(t, groups...)
		if err != nil {
			t.Fatalf("dry run failed: %v", err)
		}
		check(t, got, map[string]row{
			idle + "/0":   {nil, "commit", ""},
			idle + "/1":   {nil, "commit", ""},
			active + "/0": {cur(3), "skip", "active_on_target"},
			active + "/1": {cur(4), "skip", "active_on_target"},
			ahead + "/0":  {cur(90), "skip", "target_ahead"},
			ahead + "/1":  {cur(5), "commit", ""},
		})
		unchanged(t, idle, active, ahead)
	})

	t.Run("execute skips the active group and fails", func(t *testing.T) {
		got, err := a.apply(t, append(groups, "--execute")...)
		if err == nil || !strings.Contains(err.Error(), active) || !strings.Contains(err.Error(), "active_on_target: 2") {
			t.Errorf("execute with an active group: error %v, want one naming %s and active_on_target: 2", err, active)
		}
		check(t, got, map[string]row{
			idle + "/0":   {nil, "committed", ""},
			idle + "/1":   {nil, "committed", ""},
			active + "/0": {cur(3), "skip", "active_on_target"},
			active + "/1": {cur(4), "skip", "active_on_target"},
			ahead + "/0":  {cur(90), "skip", "target_ahead"},
			ahead + "/1":  {cur(5), "committed", ""},
		})
		unchanged(t, active)
		if got := a.bed.Target.CommittedOffsets(t, idle); !maps.Equal(got, translation) {
			t.Errorf("idle group %v, want the translation %v", got, translation)
		}
		if got, want := a.bed.Target.CommittedOffsets(t, ahead), map[messages.TopicPartition]int64{a.p0: 90, a.p1: 40}; !maps.Equal(got, want) {
			t.Errorf("ahead group %v, want %v (never lowered)", got, want)
		}
	})

	t.Run("execute again succeeds without the active group", func(t *testing.T) {
		got, err := a.apply(t, "--group", idle, "--group", ahead, "--execute")
		if err != nil {
			t.Fatalf("nothing left to commit, still failed: %v", err)
		}
		for k, r := range got {
			if r.Action != "skip" || r.Reason != "target_ahead" {
				t.Errorf("%s: %+v, want skip target_ahead", k, r)
			}
		}
	})
}

// TestTranslateBadInputOnKafka: an unknown group, a missing checkpoints topic
// and an unreachable broker each get an error that says so.
func TestTranslateBadInputOnKafka(t *testing.T) {
	a := newApplyBed(t)
	known := kafkatest.UniqueName(t, "known")
	a.checkpoint(t, known, map[messages.TopicPartition]int64{a.p0: 1})
	unknown := kafkatest.UniqueName(t, "unknown")

	otherSource := filepath.Join(t.TempDir(), "other.yaml")
	cfg := fmt.Sprintf("source.cluster.alias: %q\ntarget.cluster.alias: %q\nsource.cluster.bootstrap.servers: %q\ntarget.cluster.bootstrap.servers: %q\n",
		kafkatest.UniqueName(t, "nosource"), a.bed.Target.Alias, a.bed.Source.Bootstrap, a.bed.Target.Bootstrap)
	if err := os.WriteFile(otherSource, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(t.TempDir(), "down.yaml")
	cfg = fmt.Sprintf("source.cluster.alias: %q\ntarget.cluster.alias: %q\nsource.cluster.bootstrap.servers: %q\ntarget.cluster.bootstrap.servers: %q\n",
		a.bed.Source.Alias, a.bed.Target.Alias, a.bed.Source.Bootstrap, "127.0.0.1:1")
	if err := os.WriteFile(down, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown group", []string{"--config", a.cfgPath, "--group", known, "--group", unknown}, "no checkpoints for group " + unknown},
		{"unknown group with apply", []string{"--config", a.cfgPath, "--group", unknown, "--apply"}, "no checkpoints for group " + unknown},
		{"missing checkpoints topic", []string{"--config", otherSource, "--all-groups"}, "no checkpoints topic"},
		{"unreachable target", []string{"--config", down, "--group", known, "--timeout", "20s"}, "connect to target cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, err := runCLI(t, append([]string{"translate"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q (output %q)", err, tt.want, out)
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("took %s to say so", took)
			}
		})
	}
}

// TestResetPlanCSVOnKafka: Kafka's own kafka-consumer-groups --reset-offsets
// --from-file takes what translate --format csv prints, for one group and for
// several, and leaves the groups where translate says.
func TestResetPlanCSVOnKafka(t *testing.T) {
	a := newApplyBed(t)
	lib := jars(t)
	one, g1, g2 := kafkatest.UniqueName(t, "csv-one"), kafkatest.UniqueName(t, "csv-a"), kafkatest.UniqueName(t, "csv-b")
	a.checkpoint(t, one, map[messages.TopicPartition]int64{a.p0: 17, a.p1: 0})
	a.checkpoint(t, g1, map[messages.TopicPartition]int64{a.p0: 33, a.p1: 44})
	a.checkpoint(t, g2, map[messages.TopicPartition]int64{a.p0: 55})

	tests := []struct {
		name    string
		groups  []string
		columns int
	}{
		{"one group", []string{one}, 3},
		{"several groups", []string{g1, g2}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var groupArgs []string
			for _, g := range tt.groups {
				groupArgs = append(groupArgs, "--group", g)
			}
			out, err := runCLI(t, append([]string{"translate", "--config", a.cfgPath, "--format", "csv"}, groupArgs...)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if n := len(strings.Split(line, ",")); n != tt.columns {
					t.Fatalf("csv line %q has %d columns, want %d", line, n, tt.columns)
				}
			}
			plan := filepath.Join(t.TempDir(), "plan.csv")
			if err := os.WriteFile(plan, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			want := map[string]map[messages.TopicPartition]int64{}
			for _, g := range tt.groups {
				want[g] = a.translated(t, g)
			}
			reset := append([]string{"--bootstrap-server", a.bed.Target.Bootstrap, "--reset-offsets", "--from-file", plan}, groupArgs...)

			dry := runJava(t, lib, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", append(reset, "--dry-run")...)
			if got := parseResetOutput(t, dry, tt.groups); !equalPlans(got, want) {
				t.Errorf("kafka-consumer-groups --dry-run planned %v, translate printed %v\n%s", got, want, dry)
			}
			for _, g := range tt.groups {
				if got := a.bed.Target.CommittedOffsets(t, g); len(got) != 0 {
					t.Errorf("dry run moved group %s: %v", g, got)
				}
			}
			exe := runJava(t, lib, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", append(reset, "--execute")...)
			for _, g := range tt.groups {
				if got := a.bed.Target.CommittedOffsets(t, g); !maps.Equal(got, want[g]) {
					t.Errorf("after kafka-consumer-groups --execute group %s is at %v, translate printed %v\n%s", g, got, want[g], exe)
				}
			}
		})
	}
}

// TestRemoteClusterUtilsAgreesOnKafka: MM2's RemoteClusterUtils.translateOffsets,
// run from Kafka's jars over the same checkpoints, returns what translate prints.
func TestRemoteClusterUtilsAgreesOnKafka(t *testing.T) {
	a := newApplyBed(t)
	lib := jars(t)
	group := kafkatest.UniqueName(t, "rcu")
	a.checkpoint(t, group, map[messages.TopicPartition]int64{a.p0: 8, a.p1: 12})
	a.checkpoint(t, group, map[messages.TopicPartition]int64{a.p0: 21}) // a later checkpoint wins
	a.checkpoint(t, kafkatest.UniqueName(t, "other"), map[messages.TopicPartition]int64{a.p0: 99})

	out, err := runCLI(t, "translate", "--config", a.cfgPath, "--group", group, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []translatedOffset
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("translate output %q: %v", out, err)
	}
	var want []string
	for _, r := range rows {
		want = append(want, fmt.Sprintf("%s %d %d %s", r.Topic, r.Partition, r.DownstreamOffset, r.Metadata))
	}

	java := runJava(t, lib, filepath.Join("testdata", "java", "TranslateOffsets.java"), a.bed.Target.Bootstrap, a.bed.Source.Alias, group)
	var got []string
	for _, line := range strings.Split(java, "\n") {
		if rest, ok := strings.CutPrefix(line, "offset "); ok {
			got = append(got, strings.TrimSpace(rest))
		}
	}
	if len(want) != 2 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("RemoteClusterUtils.translateOffsets:\n%s\ncheckpointd translate:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func offsetString(off *int64) string {
	if off == nil {
		return "none"
	}
	return strconv.FormatInt(*off, 10)
}

// jars returns the test bed's Kafka jars, fetched once.
func jars(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	lib, err := kafkatest.Jars(ctx)
	if err != nil {
		t.Fatalf("Kafka jars: %v", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("java: %v", err)
	}
	return lib
}

// runJava runs a main class, or a .java file in source-launcher mode, on
// Kafka's jars and returns its stdout; it fails the test if Java does.
func runJava(t *testing.T, lib, main string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", filepath.Join(lib, "*"), main}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("java %s %v: %v\nstdout:\n%s\nstderr:\n%s", main, args, err, stdout.String(), lastLines(stderr.String(), 30))
	}
	// ConsumerGroupCommand reports its errors on stdout and exits 0.
	if strings.Contains(stdout.String(), "Error:") {
		t.Fatalf("java %s %v reported an error:\n%s", main, args, stdout.String())
	}
	return stdout.String()
}

// parseResetOutput reads kafka-consumer-groups' reset table: GROUP TOPIC
// PARTITION NEW-OFFSET rows.
func parseResetOutput(t *testing.T, out string, groups []string) map[string]map[messages.TopicPartition]int64 {
	t.Helper()
	got := map[string]map[messages.TopicPartition]int64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || !slices.Contains(groups, f[0]) {
			continue
		}
		p, err1 := strconv.ParseInt(f[2], 10, 32)
		off, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("reset output line %q", line)
		}
		if got[f[0]] == nil {
			got[f[0]] = map[messages.TopicPartition]int64{}
		}
		got[f[0]][messages.TopicPartition{Topic: f[1], Partition: int32(p)}] = off
	}
	return got
}

func equalPlans(a, b map[string]map[messages.TopicPartition]int64) bool {
	return maps.EqualFunc(a, b, func(x, y map[messages.TopicPartition]int64) bool { return maps.Equal(x, y) })
}

// joinTarget keeps a consumer-group member in group on c until the test
// ends, and returns once it has joined.
func joinTarget(t *testing.T, c *kafkatest.Cluster, group, topic string) {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup([]string{c.Bootstrap}, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &idleMember{joined: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				t.Logf("member of %s: %v", group, err)
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = cg.Close()
	})
	select {
	case <-h.joined:
	case <-time.After(30 * time.Second):
		t.Fatalf("member never joined group %s", group)
	}
}

// idleMember holds its claims and consumes nothing.
type idleMember struct {
	once   sync.Once
	joined chan struct{}
}

func (h *idleMember) Setup(sarama.ConsumerGroupSession) error {
	h.once.Do(func() { close(h.joined) })
	return nil
}
func (h *idleMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *idleMember) ConsumeClaim(s sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}
