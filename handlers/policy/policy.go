// Package policy holds the checkpoint policies users plug in: a veto on
// checkpoints before they are written, and a renaming of the target group a
// source group's offsets are committed into. MM2 has neither.
//
// Which group name goes where: the checkpoint record keeps the source group,
// as MM2 writes it (the key's group is the group whose commits were
// translated). The checkpoints topic is keyed, sharded, restored and fenced
// by that name, and RemoteClusterUtils.translateOffsets finds it under the
// source group's name. A rename applies where the commit stage reaches the
// target: the group described, read and committed is the renamed one.
package policy

import (
	"context"

	"github.com/checkpointd/checkpointd/messages"
)

// Policy decides about checkpoints before they are written and committed.
// Both functions are optional, must be safe for concurrent use and quick:
// Veto runs under the decision lock, TargetGroup on every commit round.
type Policy struct {
	// Veto refuses cp, which is then neither written nor committed, by
	// returning true; the decision is reported with reason vetoed. The
	// core's rules have been applied before it is asked.
	Veto func(ctx context.Context, cp messages.Checkpoint) bool
	// TargetGroup names the target group a source group's offsets are
	// committed into; returning the name or "" keeps it. It must be a
	// function of the name alone, the same on every instance and across
	// restarts, and must not send two source groups to one target group
	// (the second is refused, see RenameGroups).
	TargetGroup func(source string) string
}

// Join makes one Policy of several: a checkpoint is vetoed if any of them
// vetoes it, and the renames apply in order.
func Join(ps ...Policy) Policy {
	var vetoes []func(context.Context, messages.Checkpoint) bool
	var renames []func(string) string
	for _, p := range ps {
		if p.Veto != nil {
			vetoes = append(vetoes, p.Veto)
		}
		if p.TargetGroup != nil {
			renames = append(renames, p.TargetGroup)
		}
	}
	var out Policy
	if len(vetoes) > 0 {
		out.Veto = func(ctx context.Context, cp messages.Checkpoint) bool {
			for _, v := range vetoes {
				if v(ctx, cp) {
					return true
				}
			}
			return false
		}
	}
	if len(renames) > 0 {
		out.TargetGroup = func(group string) string {
			for _, r := range renames {
				if to := r(group); to != "" {
					group = to
				}
			}
			return group
		}
	}
	return out
}

// Rename is a TargetGroup function from a table; groups not in it keep
// their names.
func Rename(table map[string]string) func(string) string {
	return func(group string) string { return table[group] }
}
