// Package messages holds the records checkpointd reads and writes on the wire:
// MirrorMaker 2's OffsetSync, Checkpoint and Heartbeat records, the
// __consumer_offsets key and value codecs, and MM2's replication policies and
// internal topic names. It does no I/O.
package messages
