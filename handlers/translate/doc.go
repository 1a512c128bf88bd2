// Package translate is checkpointd's offset-translation core: MirrorMaker 2's
// OffsetSyncStore and the checkpoint rules of MirrorCheckpointTask, as pure Go
// with no I/O.
//
// Three pieces work together (MirrorCheckpointTask.checkpointsForGroup and
// OffsetSyncStore):
//
//   - [Index] keeps, per upstream topic-partition, MM2's 64-slot sparse history of
//     offset syncs and translates a committed source offset into a target offset.
//     One goroutine applies syncs while any number translate; translation never
//     waits for an update and does not allocate. Topics are found by hash and
//     their partitions in a dense array; each partition's history is one
//     pointer-free block of 16 bytes per distinct sync plus a 16-byte header
//     (about 220 bytes per partition with the 12 distinct syncs a long-running
//     partition settles at, against MM2's 2–10 KiB).
//   - [Commits] keeps the latest committed source offset per (group, upstream
//     partition) and answers "which groups have a commit on this partition", so a
//     new sync re-decides only those groups.
//   - [Checkpoints] remembers the last checkpoint emitted per (group, renamed
//     partition) and decides whether a new one is emitted.
//
// Every outcome that emits nothing carries a [Reason], for metrics and logs.
//
// The checks of MirrorCheckpointTask.checkpointsForGroup run in this order for
// one committed offset g of a group on an upstream partition tp:
//
//	if !topicFilter(tp.Topic)            -> skip, ReasonFilteredTopic
//	if g < 0 (no commit)                 -> skip, ReasonNoCommit
//	t := index.Translate(tp, g)
//	if t.Outcome != Translated           -> skip, t.Reason
//	emit, why := checkpoints.Decide(group, rename(tp), g, t.Downstream)
//	if emit { publish the checkpoint } else skip, why
//
// Renaming and topic filtering belong to the replication policy and the
// configuration; they stay with the caller.
//
// The algorithms follow MM2 exactly, including where its tests' claims are
// looser than they read: the "at most n+2 syncs expire per update" bound holds
// for the sequences MM2's test draws, not for every sequence (see
// TestExpiryBoundCounterexamples). One limit is inherited on purpose: when the
// target log loses its tail (unclean leader election), syncs naming the lost
// records stay in the history, and a group between them can be translated past
// records that survive. MM2 clears history only on an upstream rewind; the
// oracle test counts these cases instead of failing on them.
package translate
