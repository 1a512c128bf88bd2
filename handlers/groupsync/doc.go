// Package groupsync decides which translated offsets may be committed into a
// consumer group on the target cluster, and why the others may not. It does
// no I/O: callers describe the target group, read its offsets and the target's
// partitions, and hand the facts in.
//
// The rules are MirrorMaker 2's (MirrorCheckpointTask.syncGroupOffset) with
// three of its bugs fixed:
//   - a group whose describe failed is skipped and retried, not treated as
//     new and overwritten (KAFKA-19794);
//   - a group is written only when it is Empty or does not exist; MM2 also
//     tries active groups and relies on the broker to refuse;
//   - a partition whose topic is missing on the target is skipped on its own
//     instead of failing the group's whole commit every round (KAFKA-19107).
package groupsync
