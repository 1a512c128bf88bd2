//go:build !unix

package jaegertest

import "context"

// lockFile is a no-op without flock; run `make jaeger` before parallel tests.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
