package policy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/checkpointd/checkpointd/handlers/policy"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

func TestJoin(t *testing.T) {
	vetoGroup := func(g string) policy.Policy {
		return policy.Policy{Veto: func(_ context.Context, cp messages.Checkpoint) bool { return cp.Group == g }}
	}
	p := policy.Join(vetoGroup("a"), policy.Policy{TargetGroup: policy.Rename(map[string]string{"b": "b-dr"})},
		vetoGroup("c"), policy.Policy{TargetGroup: policy.Rename(map[string]string{"b-dr": "b-final"})})
	for _, tt := range []struct {
		group, target string
		veto          bool
	}{
		{"a", "a", true},
		{"b", "b-final", false},
		{"c", "c", true},
		{"d", "d", false},
	} {
		if got := p.Veto(context.Background(), messages.Checkpoint{Group: tt.group}); got != tt.veto {
			t.Errorf("Veto(%s) = %v, want %v", tt.group, got, tt.veto)
		}
		if got := p.TargetGroup(tt.group); got != tt.target {
			t.Errorf("TargetGroup(%s) = %q, want %q", tt.group, got, tt.target)
		}
	}
	if empty := policy.Join(); empty.Veto != nil || empty.TargetGroup != nil {
		t.Error("joining nothing gives hooks")
	}
}

// fakeGroups records the names it is asked about.
type fakeGroups struct {
	described, fetched, committed []string
}

func (f *fakeGroups) Describe(_ context.Context, groups []string) (map[string]targetgroup.Group, error) {
	f.described = append(f.described, groups...)
	out := map[string]targetgroup.Group{}
	for _, g := range groups {
		out[g] = targetgroup.Group{State: targetgroup.StateEmpty}
	}
	return out, nil
}

func (f *fakeGroups) Offsets(_ context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	f.fetched = append(f.fetched, groups...)
	out := map[string]map[messages.TopicPartition]int64{}
	for _, g := range groups {
		out[g] = map[messages.TopicPartition]int64{{Topic: "t", Partition: 0}: 5}
	}
	return out, nil
}

func (f *fakeGroups) ExistingPartitions(context.Context, []string) (map[messages.TopicPartition]bool, map[string]error) {
	return nil, nil
}

func (f *fakeGroups) Commit(_ context.Context, group string, offsets map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	f.committed = append(f.committed, group)
	out := map[messages.TopicPartition]targetgroup.Reason{}
	for tp := range offsets {
		out[tp] = targetgroup.Committed
	}
	return out, nil
}

// The commit stage speaks of source groups; the target is asked about the
// renamed ones, and a second source group renamed onto a taken target
// group is refused everywhere.
func TestRenameGroups(t *testing.T) {
	inner := &fakeGroups{}
	g := policy.RenameGroups(inner, policy.Rename(map[string]string{"app": "app-dr", "other": "app-dr"}), nil)
	ctx := context.Background()

	states, err := g.Describe(ctx, []string{"app", "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if !states["app"].Writable() || !states["plain"].Writable() {
		t.Fatalf("states %+v", states)
	}
	if want := []string{"app-dr", "plain"}; !equal(inner.described, want) {
		t.Fatalf("described %v, want %v", inner.described, want)
	}
	offsets, failed := g.Offsets(ctx, []string{"app"})
	if len(failed) != 0 || offsets["app"][messages.TopicPartition{Topic: "t"}] != 5 {
		t.Fatalf("offsets %v, failed %v", offsets, failed)
	}
	if _, err := g.Commit(ctx, "app", map[messages.TopicPartition]targetgroup.Checkpoint{{Topic: "t"}: {Downstream: 6}}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"app-dr"}; !equal(inner.committed, want) {
		t.Fatalf("committed %v, want %v", inner.committed, want)
	}

	// "other" would share app-dr with "app".
	states, _ = g.Describe(ctx, []string{"other"})
	var conflict *policy.RenameConflictError
	if !errors.As(states["other"].DescribeErr, &conflict) || states["other"].Writable() {
		t.Fatalf("conflicting group described as %+v", states["other"])
	}
	if _, failed := g.Offsets(ctx, []string{"other"}); failed["other"] == nil {
		t.Fatal("conflicting group's offsets were read")
	}
	if _, err := g.Commit(ctx, "other", nil); !errors.As(err, &conflict) {
		t.Fatalf("conflicting commit: %v", err)
	}
	if len(inner.committed) != 1 {
		t.Fatalf("commits reached the target: %v", inner.committed)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
