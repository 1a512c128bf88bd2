//go:build !unix

package filelock

import "context"

// Lock is a no-op without flock: callers that share a cache across processes
// must fill it before running in parallel.
func Lock(context.Context, string) (func(), error) { return func() {}, nil }
