package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/infra/health"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// fakeTarget answers every call with what the test sets.
type fakeTarget struct {
	describeErr error
	states      map[string]targetgroup.Group
	offsetErrs  map[string]error
	current     map[string]map[messages.TopicPartition]int64
	commitErr   error
	commit      map[messages.TopicPartition]targetgroup.Reason
	topicErrs   map[string]error
}

func (f fakeTarget) Describe(context.Context, []string) (map[string]targetgroup.Group, error) {
	return f.states, f.describeErr
}

func (f fakeTarget) Offsets(context.Context, []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	return f.current, f.offsetErrs
}

func (f fakeTarget) ExistingPartitions(context.Context, []string) (map[messages.TopicPartition]bool, map[string]error) {
	return nil, f.topicErrs
}

func (f fakeTarget) Commit(context.Context, string, map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	return f.commit, f.commitErr
}

// The commit stage fails when a call fails for every group it covers, and
// recovers with a commit that wrote something; one group failing among
// others that work is not the stage failing.
func TestHealthTargetGroups(t *testing.T) {
	tp := messages.TopicPartition{Topic: "src.orders", Partition: 0}
	tp1 := messages.TopicPartition{Topic: "src.orders", Partition: 1}
	denied := errors.New("GROUP_AUTHORIZATION_FAILED")
	for _, tc := range []struct {
		name   string
		target fakeTarget
		call   func(healthTargetGroups)
		want   string // "" = not failing; else in the stage's error
	}{
		{"describe fails", fakeTarget{describeErr: denied},
			func(h healthTargetGroups) { _, _ = h.Describe(context.Background(), []string{"a"}) }, "describe target groups: GROUP_AUTHORIZATION_FAILED"},
		{"every group fails to describe", fakeTarget{states: map[string]targetgroup.Group{"a": {DescribeErr: denied}, "b": {DescribeErr: denied}}},
			func(h healthTargetGroups) { _, _ = h.Describe(context.Background(), []string{"a", "b"}) }, "every group failed"},
		{"one group of two fails to describe", fakeTarget{states: map[string]targetgroup.Group{"a": {DescribeErr: denied}, "b": {}}},
			func(h healthTargetGroups) { _, _ = h.Describe(context.Background(), []string{"a", "b"}) }, ""},
		{"every offset fetch fails", fakeTarget{offsetErrs: map[string]error{"a": denied}},
			func(h healthTargetGroups) { _, _ = h.Offsets(context.Background(), []string{"a"}) }, `fetch offsets of target group "a"`},
		{"some offsets read", fakeTarget{offsetErrs: map[string]error{"a": denied}, current: map[string]map[messages.TopicPartition]int64{"b": {}}},
			func(h healthTargetGroups) { _, _ = h.Offsets(context.Background(), []string{"a", "b"}) }, ""},
		{"commit refused", fakeTarget{commit: map[messages.TopicPartition]targetgroup.Reason{tp: targetgroup.Unauthorized}},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, `commit target group "a": unauthorized`},
		{"commit call fails", fakeTarget{commitErr: denied},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, "GROUP_AUTHORIZATION_FAILED"},
		{"commit partly written", fakeTarget{commit: map[messages.TopicPartition]targetgroup.Reason{tp: targetgroup.Unauthorized, tp1: targetgroup.Committed}},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, ""},
		{"every group's describe not authorized", fakeTarget{states: map[string]targetgroup.Group{"a": {DescribeErr: sarama.ErrGroupAuthorizationFailed}}},
			func(h healthTargetGroups) { _, _ = h.Describe(context.Background(), []string{"a"}) }, `(authorization: DESCRIBE on group "a" is needed)`},
		{"offset fetch not authorized", fakeTarget{offsetErrs: map[string]error{"a": sarama.ErrGroupAuthorizationFailed}},
			func(h healthTargetGroups) { _, _ = h.Offsets(context.Background(), []string{"a"}) }, `(authorization: DESCRIBE on group "a" is needed)`},
		{"every topic's partitions not authorized", fakeTarget{topicErrs: map[string]error{"src.orders": sarama.ErrTopicAuthorizationFailed}},
			func(h healthTargetGroups) { _, _ = h.ExistingPartitions(context.Background(), []string{"src.orders"}) },
			`look up partitions of target topic "src.orders" (and 0 more): ` + sarama.ErrTopicAuthorizationFailed.Error() + ` (authorization: DESCRIBE on topic "src.orders" is needed)`},
		{"one topic of two not authorized", fakeTarget{topicErrs: map[string]error{"src.orders": sarama.ErrTopicAuthorizationFailed}},
			func(h healthTargetGroups) {
				_, _ = h.ExistingPartitions(context.Background(), []string{"src.orders", "src.other"})
			}, ""},
		{"commit not authorized", fakeTarget{commitErr: sarama.ErrGroupAuthorizationFailed},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, `(authorization: READ on group "a" is needed)`},
		{"active on target is no failure", fakeTarget{commit: map[messages.TopicPartition]targetgroup.Reason{tp: targetgroup.ActiveOnTarget}},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			reg := health.New(time.Second, nil, health.WithClock(func() time.Time { return now }))
			h := healthTargetGroups{Groups: tc.target, stage: reg.Stage(StageTargetCommits, `target "us"`, time.Second)}
			tc.call(h)
			now = now.Add(time.Second)
			tc.call(h)
			err := reg.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "stage target commits")):
				t.Errorf("Check = %v, want it to name the stage and %q", err, tc.want)
			}
		})
	}
}

// A reader's authorization failure names READ on its topic or its group,
// the publisher's WRITE on the topic it writes.
func TestStageFailuresNamePermission(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report func(*health.Stage)
		want   string
	}{
		{"log reader, topic denied", func(s *health.Stage) {
			(&Pipeline{}).stageObserver(s, "").ReadFailed("mm2-offset-syncs.b.internal",
				fmt.Errorf("topic mm2-offset-syncs.b.internal metadata: %w", sarama.ErrTopicAuthorizationFailed))
		}, `(authorization: READ on topic "mm2-offset-syncs.b.internal" is needed)`},
		{"group reader, topic denied", func(s *health.Stage) {
			(&Pipeline{}).stageObserver(s, "cpd").ReadFailed("__consumer_offsets", fmt.Errorf("consume partition 0: %w", sarama.ErrTopicAuthorizationFailed))
		}, `(authorization: READ on topic "__consumer_offsets" is needed)`},
		{"group reader, group denied", func(s *health.Stage) {
			(&Pipeline{}).stageObserver(s, "cpd-commit").ReadFailed("a.checkpoints.internal",
				fmt.Errorf("consumer group cpd-commit: %w", sarama.ErrGroupAuthorizationFailed))
		}, `(authorization: READ on group "cpd-commit" is needed)`},
		{"publisher, topic denied", func(s *health.Stage) {
			_ = healthPublisher{Publisher: &fakePublisher{err: fmt.Errorf("write: %w", sarama.ErrTopicAuthorizationFailed)}, stage: s}.Publish("a.checkpoints.internal")
		}, `(authorization: WRITE on topic "a.checkpoints.internal" is needed)`},
		{"reader, not an authorization failure", func(s *health.Stage) {
			(&Pipeline{}).stageObserver(s, "cpd").ReadFailed("t", fmt.Errorf("consume: %w", sarama.ErrNotLeaderForPartition))
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			reg := health.New(time.Second, nil, health.WithClock(func() time.Time { return now }))
			stage := reg.Stage("s", `target "us"`, time.Second)
			tc.report(stage)
			now = now.Add(time.Second)
			tc.report(stage)
			err := reg.Check()
			switch {
			case err == nil:
				t.Fatal("stage not failing")
			case tc.want == "" && strings.Contains(err.Error(), "authorization:"):
				t.Errorf("Check = %v: names a permission for a failure that is no authorization's", err)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}

type fakePublisher struct{ err error }

func (f *fakePublisher) Publish(string, ...*message.Message) error { return f.err }
func (f *fakePublisher) Close() error                              { return nil }

func TestHealthPublisher(t *testing.T) {
	now := time.Unix(1000, 0)
	reg := health.New(time.Second, nil, health.WithClock(func() time.Time { return now }))
	fake := &fakePublisher{err: errors.New("TOPIC_AUTHORIZATION_FAILED")}
	pub := healthPublisher{Publisher: fake, stage: reg.Stage(StageCheckpointWriter, `target "us"`, time.Second)}
	for range 3 {
		if err := pub.Publish("cps"); err == nil {
			t.Fatal("Publish hid the error")
		}
		now = now.Add(600 * time.Millisecond)
	}
	if err := reg.Check(); err == nil || !strings.Contains(err.Error(), `stage checkpoint publisher on cluster target "us"`) {
		t.Errorf("after failing 1.8s: Check = %v", err)
	}
	fake.err = nil
	if err := pub.Publish("cps"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Check(); err != nil {
		t.Errorf("after a publish went through: Check = %v", err)
	}
}
