package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers/groupsync"
	"github.com/checkpointd/checkpointd/infra/health"
	"github.com/checkpointd/checkpointd/messages"
)

// fakeTarget answers every call with what the test sets.
type fakeTarget struct {
	describeErr error
	states      map[string]groupsync.TargetGroup
	offsetErrs  map[string]error
	current     map[string]map[messages.TopicPartition]int64
	commitErr   error
	commit      map[messages.TopicPartition]groupsync.Reason
}

func (f fakeTarget) Describe(context.Context, []string) (map[string]groupsync.TargetGroup, error) {
	return f.states, f.describeErr
}

func (f fakeTarget) Offsets(context.Context, []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	return f.current, f.offsetErrs
}

func (f fakeTarget) ExistingPartitions(context.Context, []string) (map[messages.TopicPartition]bool, map[string]error) {
	return nil, nil
}

func (f fakeTarget) Commit(context.Context, string, map[messages.TopicPartition]groupsync.Checkpoint) (map[messages.TopicPartition]groupsync.Reason, error) {
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
		{"every group fails to describe", fakeTarget{states: map[string]groupsync.TargetGroup{"a": {DescribeErr: denied}, "b": {DescribeErr: denied}}},
			func(h healthTargetGroups) { _, _ = h.Describe(context.Background(), []string{"a", "b"}) }, "every group failed"},
		{"one group of two fails to describe", fakeTarget{states: map[string]groupsync.TargetGroup{"a": {DescribeErr: denied}, "b": {}}},
			func(h healthTargetGroups) { _, _ = h.Describe(context.Background(), []string{"a", "b"}) }, ""},
		{"every offset fetch fails", fakeTarget{offsetErrs: map[string]error{"a": denied}},
			func(h healthTargetGroups) { _, _ = h.Offsets(context.Background(), []string{"a"}) }, `fetch offsets of target group "a"`},
		{"some offsets read", fakeTarget{offsetErrs: map[string]error{"a": denied}, current: map[string]map[messages.TopicPartition]int64{"b": {}}},
			func(h healthTargetGroups) { _, _ = h.Offsets(context.Background(), []string{"a", "b"}) }, ""},
		{"commit refused", fakeTarget{commit: map[messages.TopicPartition]groupsync.Reason{tp: groupsync.Unauthorized}},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, `commit target group "a": unauthorized`},
		{"commit call fails", fakeTarget{commitErr: denied},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, "GROUP_AUTHORIZATION_FAILED"},
		{"commit partly written", fakeTarget{commit: map[messages.TopicPartition]groupsync.Reason{tp: groupsync.Unauthorized, tp1: groupsync.Committed}},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, ""},
		{"active on target is no failure", fakeTarget{commit: map[messages.TopicPartition]groupsync.Reason{tp: groupsync.ActiveOnTarget}},
			func(h healthTargetGroups) { _, _ = h.Commit(context.Background(), "a", nil) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			reg := health.New(time.Second, nil, health.WithClock(func() time.Time { return now }))
			h := healthTargetGroups{TargetGroups: tc.target, stage: reg.Stage(StageTargetCommits, `target "us"`, time.Second)}
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
