//go:build !unix

package kafkatest

import "context"

// lockFile is a no-op without flock; run `make jars` before parallel tests.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
