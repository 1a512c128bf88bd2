// Package history checks, offline, what checkpointd did during a test run
// against what it promises, whatever faults the run went through. A test
// records the run's history — every source group commit, every offset sync,
// every checkpoint written, every target group offset written, and which
// records were actually replicated where — usually by reading the topics and
// both clusters' __consumer_offsets once the run is over (Read), and Check
// returns every violation of:
//
//   - no skipped record: no checkpoint, and no target offset, is beyond the
//     target position of the first record the source group had not consumed
//     (a failover there would skip records), judged against the records
//     actually replicated and, for a target offset, against the source
//     group's commits of the last Bound;
//   - checkpoints never go back per (group, partition) unless the source
//     group went back (the rewind rule);
//   - no target offset is lowered unless the source group went back;
//   - every source commit is checkpointed, and reaches the target, within
//     Bound of being made or of the last fault healing, whichever is later;
//   - no target group is written while it has active members.
//
// Each violation names the rule, the group, the partition and the offsets.
// It is test support: nothing in checkpointd imports it.
package history
