package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/checkpointd/checkpointd/messages"
)

// DefaultDuration is how long a demo runs unless told otherwise.
const DefaultDuration = 25 * time.Second

// MinDuration is the shortest run that leaves every phase some time.
const MinDuration = 3 * time.Second

// Options configure a demo run.
type Options struct {
	// Duration is the whole run, settling included; DefaultDuration if zero.
	Duration time.Duration
	// Progress receives live progress about once a second; nil shows none.
	Progress io.Writer
	// Redraw redraws the progress in place (ANSI), for a terminal; otherwise
	// progress is printed as plain lines.
	Redraw bool
	// Logger receives checkpointd's logs; nil discards them.
	Logger *slog.Logger
}

// rig is one demo run: the clusters and every part running against them.
type rig struct {
	scene       scenario
	timeline    timeline
	started     time.Time
	source      *cluster
	target      *cluster
	producer    *producer
	mirror      *mirror
	commits     *offsetHistory // source commits
	checkpoints *checkpointLog
	watcher     *targetWatcher
}

// Run runs the demo until its duration has passed or ctx ends, and returns
// its summary. An error means the demo itself could not run; whether the
// offsets were replicated correctly is the summary's Verify.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	switch {
	case opts.Duration == 0:
		opts.Duration = DefaultDuration
	case opts.Duration < MinDuration:
		return nil, fmt.Errorf("duration %v is too short: at least %v", opts.Duration, MinDuration)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	policy := messages.DefaultReplicationPolicy{}
	r := &rig{
		scene:       defaultScenario(),
		timeline:    newTimeline(opts.Duration),
		commits:     newOffsetHistory(),
		checkpoints: newCheckpointLog(policy),
	}
	var err error
	if r.source, err = startCluster(sourceAlias); err != nil {
		return nil, err
	}
	defer r.source.close()
	if r.target, err = startCluster(targetAlias); err != nil {
		return nil, err
	}
	defer r.target.close()

	w, err := r.start(ctx, policy, opts)
	if err != nil {
		return nil, err
	}
	progressErr := r.showProgress(w.done(), opts)
	final, snapErr := r.finalSnapshot()
	workErr := w.stop()
	if err := errors.Join(workErr, progressErr, snapErr); err != nil {
		return nil, err
	}
	return r.summary(final, ctx.Err() != nil), nil
}

// start creates the topics and starts checkpointd, the mirror, the producer,
// the groups and the readers of the target.
func (r *rig) start(ctx context.Context, policy messages.ReplicationPolicy, opts Options) (*workers, error) {
	syncsTopic := policy.OffsetSyncsTopic(targetAlias)
	if err := r.createTopics(policy, syncsTopic); err != nil {
		return nil, err
	}
	props := checkpointdProperties(r.source, r.target)
	if opts.Progress != nil {
		if err := writeSetup(opts.Progress, r.scene, r.source, r.target, policy, props); err != nil {
			return nil, fmt.Errorf("print setup: %w", err)
		}
	}
	checkpointd, err := startCheckpointd(ctx, props, opts.Logger)
	if err != nil {
		return nil, err
	}
	r.producer = &producer{topics: r.scene.topics}
	r.mirror = newMirror(r.source, r.target, policy, syncsTopic)
	r.watcher = &targetWatcher{target: r.target, policy: policy, groups: r.groupNames(), seen: newOffsetHistory()}

	r.started = time.Now()
	w := newWorkers(ctx)
	w.start(checkpointd.Run)
	w.start(func(ctx context.Context) error {
		return r.mirror.run(ctx, r.scene.partitions(r.scene.topicNames()...))
	})
	w.start(func(ctx context.Context) error {
		return r.checkpoints.run(ctx, r.target, policy.CheckpointsTopic(sourceAlias))
	})
	w.start(r.watcher.run)
	w.start(func(ctx context.Context) error {
		return r.producer.run(ctx, r.source, r.timeline.produceFor)
	})
	for _, g := range r.scene.groups {
		c := &committer{spec: g, source: r.source, scene: r.scene, commits: r.commits}
		w.start(func(ctx context.Context) error { return c.run(ctx, r.timeline.commitFor) })
	}
	return w, nil
}

// createTopics creates what MM2 and the producers would have: the source
// topics, their remote copies on the target and the offset-syncs topic.
func (r *rig) createTopics(policy messages.ReplicationPolicy, syncsTopic string) error {
	for _, t := range r.scene.topics {
		if err := r.source.createTopic(t.name, t.partitions, nil); err != nil {
			return err
		}
		if err := r.target.createTopic(policy.FormatRemoteTopic(sourceAlias, t.name), t.partitions, nil); err != nil {
			return err
		}
	}
	return r.source.createTopic(syncsTopic, 1, map[string]string{"cleanup.policy": "compact"})
}

func (r *rig) groupNames() []string {
	names := make([]string, len(r.scene.groups))
	for i, g := range r.scene.groups {
		names[i] = g.name
	}
	return names
}

// showProgress prints a snapshot every second until the run's duration has
// passed or stopped is closed.
func (r *rig) showProgress(stopped <-chan struct{}, opts Options) error {
	end := time.NewTimer(r.timeline.total - time.Since(r.started))
	defer end.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	printer := &progressPrinter{w: opts.Progress, redraw: opts.Redraw}
	for {
		select {
		case <-stopped:
			return nil
		case <-end.C:
			return nil
		case <-tick.C:
			if opts.Progress == nil {
				continue
			}
			s, err := r.snapshot()
			if err != nil {
				return err
			}
			if err := printer.print(s); err != nil {
				return fmt.Errorf("print progress: %w", err)
			}
		}
	}
}

// finalSnapshot reads the target groups once more, so the summary does not
// depend on the watcher's last poll, and takes a snapshot.
func (r *rig) finalSnapshot() (snapshot, error) {
	now := time.Now()
	for _, g := range r.watcher.groups {
		if err := r.watcher.poll(g, now); err != nil {
			return snapshot{}, err
		}
	}
	return r.snapshot()
}
