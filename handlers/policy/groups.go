package policy

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/messages/targetgroup"
)

// RenameConflictError is a source group whose target name another source
// group already commits into: writing both would interleave their offsets,
// so the second is never described, read or written.
type RenameConflictError struct {
	Source, Target, Owner string
}

func (e *RenameConflictError) Error() string {
	return fmt.Sprintf("group %s renamed to %s, which group %s already commits into", e.Source, e.Target, e.Owner)
}

// RenameGroups returns g committing each source group's offsets into the
// target group rename names. The commit stage keeps speaking of source
// groups; g is asked about, and writes into, the renamed ones, so MM2's
// rules (never an active group, never lower) hold for the group written.
func RenameGroups(g targetgroup.Groups, rename func(string) string, logger *slog.Logger) targetgroup.Groups {
	if rename == nil {
		return g
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &renamed{Groups: g, rename: rename, logger: logger, owner: make(map[string]string)}
}

type renamed struct {
	targetgroup.Groups
	rename func(string) string
	logger *slog.Logger

	mu    sync.Mutex
	owner map[string]string // target group -> the source group that commits into it
}

// target is source's target group, or the conflict that forbids it.
func (r *renamed) target(source string) (string, error) {
	t := r.rename(source)
	if t == "" {
		t = source
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	owner, ok := r.owner[t]
	if !ok {
		r.owner[t] = source
		return t, nil
	}
	if owner != source {
		err := &RenameConflictError{Source: source, Target: t, Owner: owner}
		r.logger.Error("checkpoint policy: target group conflict, not synced", "error", err)
		return "", err
	}
	return t, nil
}

// Describe implements targetgroup.Groups. A conflicting group has
// DescribeErr set, so it is never written and is tried again later.
func (r *renamed) Describe(ctx context.Context, groups []string) (map[string]targetgroup.Group, error) {
	out := make(map[string]targetgroup.Group, len(groups))
	names := make([]string, 0, len(groups))
	sourceOf := make(map[string]string, len(groups))
	for _, s := range groups {
		t, err := r.target(s)
		if err != nil {
			out[s] = targetgroup.Group{DescribeErr: err}
			continue
		}
		names = append(names, t)
		sourceOf[t] = s
	}
	got, err := r.Groups.Describe(ctx, names)
	if err != nil {
		return nil, err
	}
	for t, g := range got {
		if s, ok := sourceOf[t]; ok {
			out[s] = g
		}
	}
	return out, nil
}

// Offsets implements targetgroup.Groups.
func (r *renamed) Offsets(ctx context.Context, groups []string) (map[string]map[messages.TopicPartition]int64, map[string]error) {
	failed := make(map[string]error)
	names := make([]string, 0, len(groups))
	sourceOf := make(map[string]string, len(groups))
	for _, s := range groups {
		t, err := r.target(s)
		if err != nil {
			failed[s] = err
			continue
		}
		names = append(names, t)
		sourceOf[t] = s
	}
	got, gotErrs := r.Groups.Offsets(ctx, names)
	out := make(map[string]map[messages.TopicPartition]int64, len(got))
	for t, o := range got {
		out[sourceOf[t]] = o
	}
	for t, err := range gotErrs {
		failed[sourceOf[t]] = err
	}
	return out, failed
}

// Commit implements targetgroup.Groups.
func (r *renamed) Commit(ctx context.Context, group string, offsets map[messages.TopicPartition]targetgroup.Checkpoint) (map[messages.TopicPartition]targetgroup.Reason, error) {
	t, err := r.target(group)
	if err != nil {
		return nil, err
	}
	return r.Groups.Commit(ctx, t, offsets)
}
