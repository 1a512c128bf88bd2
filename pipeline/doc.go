// Package pipeline wires checkpointd's stages into Watermill routers from a
// configuration: the translate router (offset-sync index, checkpoint tail and
// source-commit translator, publishing checkpoints to the target) and the
// commit router (target offset syncer, active on one instance at a time).
// It is also the API for adding handlers and middleware to either router.
package pipeline
