package targetgroups

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/infra/kafkaproto"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// Group protocols as GroupState reports them.
const (
	ProtocolClassic  = "classic"
	ProtocolConsumer = "consumer" // KIP-848
)

// GroupState is a target group as its coordinator describes it.
type GroupState struct {
	Group string
	// State is targetgroup.StateEmpty, targetgroup.StateNotFound, or the broker's
	// name for any other state (Stable, PreparingRebalance, Assigning, ...).
	State    string
	Protocol string // ProtocolClassic or ProtocolConsumer; "" when not found
	Members  int
	// Active means the group must not be written now: it has members or is
	// in a state other than Empty and NotFound. It is also true when Err is
	// set, because a group that could not be described is never idle.
	Active bool
	// Err is set when the describe failed; then nothing else is known.
	Err error
}

// Target is the state as the sync decision takes it.
func (s GroupState) Target() targetgroup.Group {
	return targetgroup.Group{State: s.State, Members: s.Members, DescribeErr: s.Err}
}

func newGroupState(group, state, protocol string, members int) GroupState {
	s := GroupState{Group: group, State: state, Protocol: protocol, Members: members}
	s.Active = !s.Target().Writable()
	return s
}

func failedGroupState(group string, err error) GroupState {
	return GroupState{Group: group, Active: true, Err: err}
}

// Describe returns the state of every group asked about, keyed by group.
// Like Java's Admin it asks ConsumerGroupDescribe (KIP-848) first and falls
// back to DescribeGroups for the groups that are not KIP-848 groups: on
// Kafka, DescribeGroups reports a running KIP-848 group as Dead. A group
// whose describe failed gets an entry with Err set, never one that says
// NotFound. The error is the context's, if it ended first.
func (c *Client) Describe(ctx context.Context, groups []string) (map[string]GroupState, error) {
	out := make(map[string]GroupState, len(groups))
	todo := uniq(groups)
	classic := c.describeConsumerGroups(ctx, todo, out)
	c.describeClassicGroups(ctx, classic, out)
	return out, ctx.Err()
}

// describeConsumerGroups describes the KIP-848 groups among groups into out
// and returns the groups that are not KIP-848 groups.
func (c *Client) describeConsumerGroups(ctx context.Context, groups []string, out map[string]GroupState) (others []string) {
	version := c.client.Config().Version
	if len(groups) == 0 || !version.IsAtLeast(sarama.V3_7_0_0) {
		return groups
	}
	failed := c.eachCoordinator(ctx, groups, func(b *sarama.Broker, gs []string) (map[string]error, error) {
		req := sarama.NewConsumerGroupDescribeRequest(version)
		req.GroupIDs = gs
		resp, err := b.ConsumerGroupDescribe(req)
		if errors.Is(err, sarama.ErrUnsupportedVersion) {
			// A broker before 3.7 has no KIP-848 groups at all.
			others = append(others, gs...)
			return allDone(gs), nil
		}
		if err != nil {
			return nil, err
		}
		errs := make(map[string]error, len(resp.Groups))
		for _, d := range resp.Groups {
			switch d.ErrorCode {
			case sarama.ErrNoError:
				out[d.GroupID] = newGroupState(d.GroupID, d.GroupState, ProtocolConsumer, len(d.Members))
				errs[d.GroupID] = nil
			case sarama.ErrGroupIDNotFound: // a classic group, or none at all
				others = append(others, d.GroupID)
				errs[d.GroupID] = nil
			default:
				errs[d.GroupID] = describeError(d.GroupID, d.ErrorCode, d.ErrorMessage)
			}
		}
		return errs, nil
	})
	for g, err := range failed {
		out[g] = failedGroupState(g, fmt.Errorf("describe consumer group %q on the target: %w", g, err))
	}
	return others
}

// describeClassicGroups describes groups with DescribeGroups into out.
func (c *Client) describeClassicGroups(ctx context.Context, groups []string, out map[string]GroupState) {
	if len(groups) == 0 {
		return
	}
	version := kafkaproto.DescribeGroups(c.client.Config().Version)
	failed := c.eachCoordinator(ctx, groups, func(b *sarama.Broker, gs []string) (map[string]error, error) {
		resp, err := b.DescribeGroups(&sarama.DescribeGroupsRequest{Version: version, Groups: gs})
		if err != nil {
			return nil, err
		}
		errs := make(map[string]error, len(resp.Groups))
		for _, d := range resp.Groups {
			switch d.Err {
			case sarama.ErrNoError:
				out[d.GroupId] = classicGroupState(d)
				errs[d.GroupId] = nil
			case sarama.ErrGroupIDNotFound: // DescribeGroups v6+ says so for unknown groups
				out[d.GroupId] = newGroupState(d.GroupId, targetgroup.StateNotFound, "", 0)
				errs[d.GroupId] = nil
			default:
				errs[d.GroupId] = describeError(d.GroupId, d.Err, nil)
			}
		}
		return errs, nil
	})
	for g, err := range failed {
		out[g] = failedGroupState(g, fmt.Errorf("describe group %q on the target: %w", g, err))
	}
}

// classicGroupState maps a DescribeGroups answer. Before v6 an unknown group
// comes back as Dead with no members and no error.
func classicGroupState(d *sarama.GroupDescription) GroupState {
	if d.State == "Dead" && len(d.Members) == 0 {
		return newGroupState(d.GroupId, targetgroup.StateNotFound, "", 0)
	}
	return newGroupState(d.GroupId, d.State, ProtocolClassic, len(d.Members))
}

func describeError(group string, kerr sarama.KError, msg *string) error {
	err := error(kerr)
	if msg != nil && *msg != "" {
		err = fmt.Errorf("%w: %s", kerr, *msg)
	}
	return kafkaerr.Needs(err, kafkaerr.Permission{Operation: "DESCRIBE", ResourceType: "group", Name: group})
}

func allDone(groups []string) map[string]error {
	m := make(map[string]error, len(groups))
	for _, g := range groups {
		m[g] = nil
	}
	return m
}

func uniq(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
