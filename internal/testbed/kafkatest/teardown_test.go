package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

func TestBedCloseStopsJVMsAndRemovesDirs(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs real Kafka")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	fetchStart := time.Now()
	lib, err := Jars(ctx)
	if err != nil {
		t.Fatalf("kafka jars (needs Java 17 and Maven): %v", err)
	}
	t.Logf("jar fetch (warm cache): %s", time.Since(fetchStart).Round(time.Microsecond))

	// A three-node target: Close must stop the JVMs of both kinds of cluster.
	b, err := StartBed(ctx, BedOptions{Lib: lib, SourceAlias: "east", TargetAlias: "west", TargetBrokers: 3})
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			t.Fatalf("integration test needs Java 17 and Maven: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() }) // a no-op once the test closed it
	t.Logf("two clusters (one and three nodes) ready in %s (source %s, target %s)", b.ReadyIn.Round(time.Millisecond),
		b.Source.ReadyIn.Round(time.Millisecond), b.Target.ReadyIn.Round(time.Millisecond))

	m := b.StartMM2(t, MM2Options{NoWait: true})
	pids := b.Pids()
	if len(pids) != 5 {
		t.Fatalf("bed pids = %v, want a source broker, three target nodes and MirrorMaker", pids)
	}
	dirs := []string{b.Dir, b.Source.Dir, b.Target.Dir, m.Dir}
	for _, pid := range pids {
		if !processAlive(pid) {
			t.Fatalf("pid %d is not running before Close", pid)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("dir before Close: %v", err)
		}
	}

	closeStart := time.Now()
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("bed closed in %s", time.Since(closeStart).Round(time.Millisecond))
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("pid %d still runs after Close", pid)
		}
		if runtime.GOOS == "linux" {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("/proc/%d after Close: %v, want it gone", pid, err)
			}
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Close: %v, want it removed", d, err)
		}
	}
	if err := m.Stop(); err != nil {
		t.Errorf("stop after the bed closed it: %v", err)
	}
}
