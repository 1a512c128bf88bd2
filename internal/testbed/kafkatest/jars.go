package kafkatest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"github.com/checkpointd/checkpointd/internal/filelock"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KafkaVersion is the Apache Kafka release the test bed runs; the pom pins it too.
const KafkaVersion = "4.1.1"

//go:embed runtime/pom.xml
var runtimePOM []byte

// ErrUnavailable means Java, Maven or the jars cannot be had on this machine.
var ErrUnavailable = errors.New("kafka test bed unavailable")

// CacheDir is where the jars live: $KAFKA_REF_CACHE, else the user cache dir.
func CacheDir() (string, error) {
	if d := os.Getenv("KAFKA_REF_CACHE"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate cache dir (set KAFKA_REF_CACHE): %w", err)
	}
	return filepath.Join(base, "checkpointd", "kafka-"+KafkaVersion), nil
}

// Jars returns the directory holding the Kafka, MM2 and log4j jars, fetching
// them with Maven on first use. The fetch is the only step that needs a network.
func Jars(ctx context.Context) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return fetchJars(ctx, cache, cache, runtimePOM, "Kafka "+KafkaVersion,
		"kafka_2.13-"+KafkaVersion+".jar", "connect-mirror-"+KafkaVersion+".jar", "log4j-slf4j-impl-")
}

// fetchJars returns dir/lib, fetching into it with Maven the runtime dependencies of
// pom unless they were fetched for this pom before; wants are prefixes of jars that
// must be there. Maven keeps its downloads in m2Parent/m2.
func fetchJars(ctx context.Context, dir, m2Parent string, pom []byte, what string, wants ...string) (string, error) {
	lib := filepath.Join(dir, "lib")
	marker := filepath.Join(lib, ".complete")
	pomPath := filepath.Join(dir, "pom.xml")
	if cached(pomPath, marker, pom) {
		return lib, nil
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%w: %s not found on PATH (install Java 17 and Maven)", ErrUnavailable, tool)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create jar cache %s: %w", dir, err)
	}
	// `go test ./...` runs test binaries in parallel; one fetches, the others wait.
	unlock, err := filelock.Lock(ctx, filepath.Join(dir, ".lock"))
	if err != nil {
		return "", fmt.Errorf("lock jar cache %s: %w", dir, err)
	}
	defer unlock()
	if cached(pomPath, marker, pom) {
		return lib, nil
	}
	if err := os.RemoveAll(lib); err != nil {
		return "", fmt.Errorf("clear stale jars: %w", err)
	}
	if err := os.WriteFile(pomPath, pom, 0o644); err != nil {
		return "", fmt.Errorf("write pom: %w", err)
	}
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q",
		"-f", pomPath,
		"-Dmaven.repo.local="+filepath.Join(m2Parent, "m2"),
		"org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
		"-DoutputDirectory="+lib, "-DincludeScope=runtime")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: maven fetch of %s jars failed: %v\n%s", ErrUnavailable, what, err, tail(out, 40))
	}
	for _, want := range wants {
		if !hasJar(lib, want) {
			return "", fmt.Errorf("%w: jar %s missing after fetch into %s", ErrUnavailable, want, lib)
		}
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return "", fmt.Errorf("mark jar cache complete: %w", err)
	}
	return lib, nil
}

// cached reports whether the jars were fetched for the current pom; a changed
// pom (new version pins) invalidates the cache.
func cached(pomPath, marker string, pom []byte) bool {
	old, err := os.ReadFile(pomPath)
	if err != nil || !bytes.Equal(old, pom) {
		return false
	}
	_, err = os.Stat(marker)
	return err == nil
}

func hasJar(dir, prefix string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			return true
		}
	}
	return false
}

// tail returns the last n lines of out, for error messages.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
