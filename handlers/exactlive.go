package handlers

import (
	"context"
	"time"

	"github.com/checkpointd/checkpointd/handlers/translate"
	"github.com/checkpointd/checkpointd/messages"
)

// IdleCommit is a source commit of a group this instance owns that has not
// moved for a while, and where MM2's rule leaves it.
type IdleCommit struct {
	Group    string
	Upstream messages.TopicPartition // the source partition
	Target   messages.TopicPartition // its copy on the target
	Offset   int64                   // the committed offset
	// Checkpointed is the downstream offset of the pair's last checkpoint,
	// -1 for none.
	Checkpointed int64
}

// IdleCommits returns the commits of the groups this instance owns, on
// checkpointed topics, committed before before and still where they were,
// whose translation by MM2's rule may be short of the exact one: the commit
// is not at an offset sync itself. Nothing while the gate is closed.
func (c *Checkpointer) IdleCommits(before time.Time) []IdleCommit {
	if !c.gateOpen.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []IdleCommit
	for group := range c.groupShard {
		if !c.isLive(group) {
			continue
		}
		c.commits.ForEachOf(group, func(tp messages.TopicPartition, cm translate.Commit) {
			if cm.Offset < 0 || cm.Time.After(before) {
				return
			}
			topic := c.topicInfo(tp.Topic)
			if !topic.checkpointed {
				return
			}
			if tr := c.index.Translate(tp, cm.Offset); tr.Outcome != translate.Translated || tr.Sync.Upstream == cm.Offset {
				return
			}
			ic := IdleCommit{Group: group, Upstream: tp, Target: messages.TopicPartition{Topic: topic.downstream, Partition: tp.Partition},
				Offset: cm.Offset, Checkpointed: -1}
			if last, ok := c.emitted.Last(group, ic.Target); ok {
				ic.Checkpointed = last.Downstream
			}
			out = append(out, ic)
		})
	}
	return out
}

// EmitExact emits downstream, the exact translation of group's commit at
// offset on the source partition tp, as an ordinary checkpoint: only while
// the group's commit there is still offset and this instance owns the group,
// and only if MM2's checkpoint rules let it out (it is newer than the last
// one; a policy's veto holds too). It reports whether it emitted.
func (c *Checkpointer) EmitExact(ctx context.Context, group string, tp messages.TopicPartition, offset, downstream int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cm, ok := c.commits.Get(group, tp)
	if !ok || cm.Offset != offset || !c.isLive(group) || !c.gateOpen.Load() {
		return false
	}
	topic := c.topicInfo(tp.Topic)
	if !topic.checkpointed {
		return false
	}
	renamed := messages.TopicPartition{Topic: topic.downstream, Partition: tp.Partition}
	cp := messages.Checkpoint{Group: group, TopicPartition: renamed, UpstreamOffset: offset, DownstreamOffset: downstream, Metadata: cm.Metadata}
	if c.cfg.Veto != nil && c.cfg.Veto(ctx, cp) {
		return false
	}
	if emit, _ := c.emitted.Decide(group, renamed, offset, downstream); !emit {
		return false
	}
	c.emittedHere[group] = struct{}{}
	recordDecision(ctx, group, tp, renamed, DecisionEmitted, "", offset, downstream)
	c.cfg.Emitter.Emit(ctx, cp, cm.Time)
	c.cfg.Observer.CheckpointEmitted(ctx, cp, cm.Time)
	return true
}
