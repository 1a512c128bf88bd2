// Package kafkalog reads and writes the Kafka logs checkpointd is built on.
//
// The readers are Watermill subscribers over sarama that replay a topic from
// its oldest offset and never commit a consumer-group position: checkpointd
// rebuilds its state from compacted logs on every start, and commits of its
// own would land in __consumer_offsets, one of the logs it reads. They tell
// handlers, with envelope control messages, when a replay has caught up with
// the records that existed when reading began, and which partitions an
// instance owns.
//
//   - LogReader reads every partition of a topic with no consumer group, so
//     every instance sees everything (the offset-syncs topic, the checkpoints
//     topic).
//   - ShardedReader shares a topic's partitions among instances through a
//     consumer group (__consumer_offsets; the one-partition checkpoints
//     topic, to make one instance the active committer).
//
// Both deliver one message per partition at a time and wait for its ack, so
// per-partition order holds through a Watermill router. With
// ReaderConfig.BatchRecords a message may carry several consecutive records
// of a partition (envelope.FromRecords), for replays of large logs.
//
// On the writing side, CheckpointMarshaler and NewCheckpointPublisher write
// MM2 checkpoint records whose key and value are exactly MM2's, and
// EnsureTopic creates the checkpoints topic.
package kafkalog
