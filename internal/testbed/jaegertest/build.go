package jaegertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/checkpointd/checkpointd/internal/filelock"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Version is the Jaeger release the tests run, from the Go module proxy.
const Version = "1.75.0"

const module = "github.com/jaegertracing/jaeger"

// ErrUnavailable means the Jaeger binary cannot be had on this machine: no
// Go toolchain, or the module download or build failed.
var ErrUnavailable = errors.New("jaeger test binary unavailable")

// CacheDir is where the binary lives: $JAEGER_TEST_CACHE, else the user
// cache dir.
func CacheDir() (string, error) {
	if d := os.Getenv("JAEGER_TEST_CACHE"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate cache dir (set JAEGER_TEST_CACHE): %w", err)
	}
	return filepath.Join(base, "checkpointd", "jaeger-"+Version), nil
}

// Cached reports whether the binary is already built.
func Cached() bool {
	cache, err := CacheDir()
	return err == nil && isFile(binaryPath(cache))
}

func binaryPath(cache string) string { return filepath.Join(cache, "bin", "jaeger-all-in-one") }

// Binary returns the path of the all-in-one binary, building it on first
// use. The build is the only step that needs a network (the module proxy).
func Binary(ctx context.Context) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin := binaryPath(cache)
	if isFile(bin) {
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w: go not found on PATH", ErrUnavailable)
	}
	if err := os.MkdirAll(filepath.Join(cache, "bin"), 0o755); err != nil {
		return "", fmt.Errorf("create jaeger cache %s: %w", cache, err)
	}
	// `go test ./...` runs test binaries in parallel; one builds, the others wait.
	unlock, err := filelock.Lock(ctx, filepath.Join(cache, ".lock"))
	if err != nil {
		return "", fmt.Errorf("lock jaeger cache %s: %w", cache, err)
	}
	defer unlock()
	if isFile(bin) {
		return bin, nil
	}

	// go mod download outside any module: it fetches just Jaeger's source.
	dl := exec.CommandContext(ctx, goBin, "mod", "download", "-json", module+"@v"+Version)
	dl.Dir = cache
	dl.Env = goEnv()
	var stderr bytes.Buffer
	dl.Stderr = &stderr
	out, err := dl.Output()
	if err != nil {
		return "", fmt.Errorf("%w: go mod download %s@v%s: %v\n%s%s", ErrUnavailable, module, Version, err, tail(stderr.Bytes(), 20), tail(out, 20))
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("%w: go mod download %s@v%s: no source dir (%v %s)", ErrUnavailable, module, Version, err, info.Error)
	}

	// The module cache is read-only and the build must be free to complete
	// go.mod and go.sum (-mod=mod): build a writable copy.
	src := filepath.Join(cache, "src")
	if err := os.RemoveAll(src); err != nil {
		return "", fmt.Errorf("clear stale jaeger source: %w", err)
	}
	if err := copyTree(info.Dir, src); err != nil {
		return "", fmt.Errorf("copy jaeger source: %w", err)
	}
	defer os.RemoveAll(src)
	tmp := bin + ".tmp"
	build := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, "./cmd/all-in-one")
	build.Dir = src
	build.Env = goEnv()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: go build ./cmd/all-in-one of jaeger v%s: %v\n%s", ErrUnavailable, Version, err, tail(out, 40))
	}
	if err := os.Rename(tmp, bin); err != nil { // atomic: a binary in place is complete
		return "", fmt.Errorf("install jaeger binary: %w", err)
	}
	return bin, nil
}

// goEnv is the environment of the go commands: the caller's, without a
// workspace, resolving missing requirements (-mod=mod) and stamping no VCS
// information (the copy is in no repository).
func goEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOWORK=") {
			env = append(env, kv)
		}
	}
	return append(env, "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// copyTree copies the regular files and directories under from into to,
// owner-writable.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, dst)
		default:
			return nil // the module zip holds no links or devices
		}
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tail returns the last n lines of out, for error messages.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
