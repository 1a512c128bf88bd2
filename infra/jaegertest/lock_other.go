//go:build !unix

package jaegertest

import "context"

// lockFile is a no-op without flock; run `go run ./infra/jaegertest/cmd/buildjaeger` before parallel tests.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
