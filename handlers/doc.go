// Package handlers holds checkpointd's Watermill handlers: the offset-sync
// indexer, the source-commit translator, the checkpoint tail that restores
// what was emitted before, and the target offset syncer. The pure rules they
// apply live in subpackages (translate, groupsync, filter) and are tested
// without I/O; the handlers only decode messages, keep the shared state
// consistent and hand decisions to the outbox.
package handlers
