package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaproto"
)

// membership is a ShardedReader's place in its group during one session.
type membership struct {
	client     sarama.Client
	topic      string
	memberID   string
	generation int32
}

// ErrNotOwner is what Verify says when the group's coordinator does not list
// this member as the owner of a partition.
var ErrNotOwner = errors.New("not the owner at the group coordinator")

// Verify asks the group coordinator whether this reader's member still owns
// partitions of the topic it reads: the member must be in the group and
// each partition in its assignment (during a cooperative rebalance, when
// the coordinator shows no assignments, being in the group is enough: see
// below). It is the fence of the work done for
// those partitions: an instance that was paused or cut off while the group
// moved its partitions on is no longer listed (its session expired, or a
// static member's place was taken by a new member id), and learns it here
// before acting. Between two generations of a cooperative rebalance the
// members keep the partitions they are not giving up, so the commits of
// unmoved partitions go on. It implements handlers.Fence.
func (r *ShardedReader) Verify(ctx context.Context, partitions []int32) error {
	m := r.member.Load()
	if m == nil {
		return fmt.Errorf("group %s: %w: no session (joining or rebalancing)", r.cfg.GroupID, ErrNotOwner)
	}
	coordinator, err := m.client.Coordinator(r.cfg.GroupID)
	if err != nil {
		return fmt.Errorf("group %s: find the coordinator: %w", r.cfg.GroupID, err)
	}
	type answer struct {
		res *sarama.DescribeGroupsResponse
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := coordinator.DescribeGroups(&sarama.DescribeGroupsRequest{
			Version: kafkaproto.DescribeGroups(r.sarama.Version), Groups: []string{r.cfg.GroupID}})
		done <- answer{res, err}
	}()
	var a answer
	select {
	case <-ctx.Done():
		return ctx.Err()
	case a = <-done:
	}
	if a.err != nil {
		_ = m.client.RefreshCoordinator(r.cfg.GroupID)
		return fmt.Errorf("group %s: describe at the coordinator: %w", r.cfg.GroupID, a.err)
	}
	if len(a.res.Groups) != 1 {
		return fmt.Errorf("group %s: describe answered %d groups", r.cfg.GroupID, len(a.res.Groups))
	}
	g := a.res.Groups[0]
	if !errors.Is(g.Err, sarama.ErrNoError) {
		if errors.Is(g.Err, sarama.ErrNotCoordinatorForConsumer) {
			_ = m.client.RefreshCoordinator(r.cfg.GroupID)
		}
		return fmt.Errorf("group %s: describe: %w", r.cfg.GroupID, g.Err)
	}
	desc, ok := g.Members[m.memberID]
	if !ok {
		return fmt.Errorf("group %s (%s): %w: member %s is not in the group", r.cfg.GroupID, g.State, ErrNotOwner, m.memberID)
	}
	if g.State != "Stable" && r.cfg.Rebalance == RebalanceCooperativeSticky {
		// A rebalance is under way and the coordinator shows no
		// assignments. Cooperatively, a member keeps its partitions
		// through a rebalance until it revokes them itself, which the
		// caller hears of (Revoked) before the partition can move: a
		// member still in the group still owns what it has not revoked.
		return nil
	}
	assignment, err := desc.GetMemberAssignment()
	if err != nil {
		return fmt.Errorf("group %s: member %s's assignment: %w", r.cfg.GroupID, m.memberID, err)
	}
	var owned []int32
	if assignment != nil {
		owned = assignment.Topics[m.topic]
	}
	for _, p := range partitions {
		if !slices.Contains(owned, p) {
			return fmt.Errorf("group %s (%s): %w: partition %d of %s is not assigned to member %s",
				r.cfg.GroupID, g.State, ErrNotOwner, p, m.topic, m.memberID)
		}
	}
	return nil
}

// memberSlot is where the subscriptions record the current session.
type memberSlot = atomic.Pointer[membership]
