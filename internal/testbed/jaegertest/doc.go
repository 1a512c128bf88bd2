// Package jaegertest runs a real Jaeger for end-to-end tracing tests: the v1
// all-in-one distribution (collector, query, in-memory storage in one
// process), built once from the Go module proxy into a cache outside the
// repository, and started on free ports of 127.0.0.1 only.
//
// go run and go install refuse Jaeger's module (its go.mod has a replace
// directive), so Binary downloads the module source with `go mod download`,
// copies it into a writable directory in the cache and builds
// ./cmd/all-in-one there. The first build downloads about a gigabyte of
// modules and compiles for several minutes on a small machine; `go run ./internal/testbed/jaegertest/cmd/buildjaeger`
// does it ahead of the tests. Later calls find the binary in the cache:
// $JAEGER_TEST_CACHE, else <user cache dir>/checkpointd/jaeger-<version>.
//
//	func TestSomething(t *testing.T) {
//		j := jaegertest.Start(t) // skips with -short; fails if it cannot be built
//		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", j.OTLPEndpoint())
//		... export spans over OTLP/HTTP, flush them ...
//		traces, err := j.Traces(ctx, service)
//	}
//
// The process is stopped when the test ends (SIGTERM, then SIGKILL), and on
// Linux the kernel kills it if the test binary dies.
package jaegertest
