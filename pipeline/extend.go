package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/checkpointd/checkpointd/handlers/events"
	"github.com/checkpointd/checkpointd/handlers/policy"
	"github.com/checkpointd/checkpointd/infra/config"
)

// builtinHandlers are the names of the handlers checkpointd adds to its
// routers; users' handlers may not take them.
var builtinHandlers = []string{"index_offset_syncs", "restore_checkpoints", "translate_commits", "own_shards", "sync_target_offsets"}

// BuiltinHandlers lists the names of checkpointd's own router handlers.
func BuiltinHandlers() []string { return slices.Clone(builtinHandlers) }

// checkExtensions checks the users' handlers, hooks and policies before
// anything is connected: names taken twice or by a built-in, and hooks on
// a router that will not be built.
func checkExtensions(cfg *config.Config, o *options) error {
	var errs []error
	taken := make(map[string]string)
	claim := func(name, what string) {
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("%s without a name", what))
		case slices.Contains(builtinHandlers, name):
			errs = append(errs, fmt.Errorf("%s %q: the name is a built-in handler's", what, name))
		case taken[name] != "":
			errs = append(errs, fmt.Errorf("%s %q: the name is taken by %s", what, name, taken[name]))
		default:
			taken[name] = what
		}
	}
	for _, h := range o.checkpointHandlers {
		claim(h.name, "checkpoint handler")
		if h.fn == nil {
			errs = append(errs, fmt.Errorf("checkpoint handler %q: no function", h.name))
		}
	}
	for _, h := range o.eventHandlers {
		if h != nil {
			claim(h.Name(), "event handler")
		}
	}
	if err := events.Validate(o.eventHandlers, nil); err != nil {
		errs = append(errs, err)
	}
	if len(o.commitHooks) > 0 && !cfg.SyncGroupOffsets && len(o.checkpointHandlers) == 0 {
		errs = append(errs, errors.New("WithCommitRouter: there is no commit router to hook into, because sync.group.offsets.enabled=false and no WithCheckpointHandler is set; "+
			"enable the sync, or use WithTranslateRouter or WithEventHandler"))
	}
	return errors.Join(errs...)
}

// runHooks calls the users' router hooks in order. Watermill panics on a
// handler name taken twice; that becomes New's error.
func runHooks(router string, r *message.Router, hooks []func(*message.Router)) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if e, ok := v.(error); ok {
				err = fmt.Errorf("%s router hook: %w", router, e)
				return
			}
			err = fmt.Errorf("%s router hook: %v", router, v)
		}
	}()
	for _, hook := range hooks {
		hook(r)
	}
	return nil
}

// policy is the users' policies joined.
func (o *options) policy() policy.Policy { return policy.Join(o.policies...) }

// newEventBus makes the bus of the users' event handlers; nil if none.
func (p *Pipeline) newEventBus() (*events.Bus, error) {
	if len(p.opts.eventHandlers) == 0 {
		return nil, nil
	}
	bus, err := events.New(events.Config{Logger: p.logger}, p.opts.eventHandlers...)
	if err != nil {
		return nil, fmt.Errorf("event handlers: %w", err)
	}
	return bus, nil
}

// EventStats reports each event handler's counters (queued, handled,
// failed, dropped); nil without event handlers.
func (p *Pipeline) EventStats() []events.Stats {
	if p.events == nil {
		return nil
	}
	return p.events.Stats()
}

// runEvents runs the event handlers until ctx ends.
func (p *Pipeline) runEvents(ctx context.Context) error {
	if p.events == nil {
		return nil
	}
	return p.events.Run(ctx)
}

// ConsumerGroup is a consumer group checkpointd joins.
type ConsumerGroup struct {
	Name    string
	Cluster string // "source" or "target"
	Purpose string
}

// ConsumerGroups lists the consumer groups a pipeline built from cfg and
// opt joins, for ACLs and for `checkpointd validate`. Typed event handlers
// and policies join none.
func ConsumerGroups(cfg *config.Config, opt ...Option) []ConsumerGroup {
	var o options
	for _, f := range opt {
		f(&o)
	}
	var out []ConsumerGroup
	switch cfg.CommitSource {
	case "admin-poll":
		out = append(out, ConsumerGroup{cfg.GroupID, "target", "shares the source groups among instances (admin poll shard topic)"})
	case "offsets-log":
		out = append(out, ConsumerGroup{cfg.GroupID, "source", "shares __consumer_offsets partitions (the source groups) among instances"})
	default:
		out = append(out, ConsumerGroup{cfg.GroupID, "source or target", "shares the source groups among instances: on the source over __consumer_offsets, or on the target over the admin poll shard topic (checkpointd.commit.source=auto decides at start)"})
	}
	for _, h := range o.checkpointHandlers {
		if cfg.Shadow {
			break // no commit router in shadow mode: the handlers do not run
		}
		out = append(out, ConsumerGroup{cfg.GroupID + "-handler-" + h.name, "target", "checkpoint handler " + h.name + " (one instance at a time)"})
	}
	return out
}
