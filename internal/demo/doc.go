// Package demo runs checkpointd end to end in one process, for `make demo`
// and as a smoke test: two embedded Kafka-protocol clusters (kfake), a
// producer on the source, a small MirrorMaker-2-like mirror that copies
// records to the target and writes MM2 offset syncs, consumer groups
// committing on the source, and checkpointd translating those commits and
// syncing them into the target's groups. It shows live progress and ends with
// a summary that checks no translated offset skips a record.
package demo
