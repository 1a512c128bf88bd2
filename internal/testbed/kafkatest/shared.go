package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The package's only global state: the open beds that RunMain or an interrupt
// must tear down, and the lazily started shared bed.
var (
	state struct {
		mu         sync.Mutex
		mainActive bool // RunMain is running the tests
		open       map[*Bed]struct{}
	}
	shared            startOnce[*Bed]
	sharedThreeBroker startOnce[*Bed]
)

// startOnce starts a test binary's shared cluster on first use. Its lock is
// held while the cluster starts, so parallel tests wait for it; a failed
// start is not retried, and every later caller gets the same error.
type startOnce[T any] struct {
	mu    sync.Mutex
	tried bool
	v     T
	err   error
}

// get returns the cluster, starting it with start (within 10 minutes: the
// jars may need fetching; the clusters have their own readiness bounds) on
// the first call, and then calling started with it.
func (o *startOnce[T]) get(start func(context.Context) (T, error), started func(T)) (T, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.tried {
		o.tried = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if o.v, o.err = start(ctx); o.err == nil {
			started(o.v)
		}
	}
	return o.v, o.err
}

// requireShared skips t with -short and fails it unless RunMain is running
// the tests (it tears the shared clusters down); what names the caller.
func requireShared(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs real Kafka")
	}
	state.mu.Lock()
	mainActive := state.mainActive
	state.mu.Unlock()
	if !mainActive {
		t.Fatal(what + " needs the package's TestMain to call kafkatest.RunMain, which tears the clusters down: func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }")
	}
}

// failUnavailable fails t with err from starting a shared cluster (what),
// naming Java and Maven when they are what is missing.
func failUnavailable(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, ErrUnavailable) {
		t.Fatalf("integration test needs Java 17 and Maven to run real Kafka %s: %v", KafkaVersion, err)
	}
	t.Fatalf("%s: %v", what, err)
}

func register(b *Bed) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.open == nil {
		state.open = make(map[*Bed]struct{})
	}
	state.open[b] = struct{}{}
}

func unregister(b *Bed) {
	state.mu.Lock()
	defer state.mu.Unlock()
	delete(state.open, b)
}

// closeAll tears down every bed still open in this process.
func closeAll() error {
	state.mu.Lock()
	beds := make([]*Bed, 0, len(state.open))
	for b := range state.open {
		beds = append(beds, b)
	}
	state.mu.Unlock()

	errs := make([]error, len(beds))
	var wg sync.WaitGroup
	for i, b := range beds {
		wg.Go(func() { errs[i] = b.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RunMain runs a package's tests and then tears down the shared bed and any
// other bed still open. A SIGINT or SIGTERM tears them down too before the
// process exits. Use it as:
//
//	func TestMain(m *testing.M) { os.Exit(kafkatest.RunMain(m)) }
func RunMain(m *testing.M) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "kafkatest: %v: tearing down Kafka test clusters (again to skip)\n", sig)
			closed := make(chan struct{})
			go func() {
				if err := closeAll(); err != nil {
					fmt.Fprintf(os.Stderr, "kafkatest: %v\n", err)
				}
				close(closed)
			}()
			select {
			case <-closed:
			case <-sigs: // impatient: exit now, the kernel kills the JVMs
			}
			code := 1
			if s, ok := sig.(syscall.Signal); ok {
				code = 128 + int(s)
			}
			os.Exit(code)
		case <-done:
		}
	}()

	state.mu.Lock()
	state.mainActive = true
	state.mu.Unlock()
	code := m.Run()
	if err := closeAll(); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Shared returns the two clusters shared by all tests of this test binary,
// starting them on first use. Tests must use UniqueName for their topics and
// groups. With -short it skips the test. When Java, Maven or the jars are
// missing it fails the test: a CI run must not go green without Kafka.
func Shared(t testing.TB) *Bed {
	t.Helper()
	requireShared(t, "kafkatest.Shared")
	bed, err := shared.get(func(ctx context.Context) (*Bed, error) { return StartBed(ctx, BedOptions{}) }, func(b *Bed) {
		t.Logf("kafkatest: shared clusters ready in %s (source %s, target %s)",
			b.ReadyIn.Round(time.Millisecond), b.Source.Bootstrap, b.Target.Bootstrap)
	})
	if err != nil {
		failUnavailable(t, "shared Kafka clusters", err)
	}
	if bed.isClosed() {
		t.Fatal("shared Kafka clusters were already torn down")
	}
	return bed
}

// SharedThreeBrokerTarget returns a second bed shared by the tests of this
// test binary, started on first use and torn down by RunMain: a single-node
// source as in Shared, and a target of three nodes (BedOptions.TargetBrokers)
// whose group coordinators and partition leaders are spread over three
// brokers. Tests that stop a node (Target.StopNode) must restart it before
// they end. Like Shared, it skips with -short and fails without Java or the
// jars.
func SharedThreeBrokerTarget(t testing.TB) *Bed {
	t.Helper()
	requireShared(t, "kafkatest.SharedThreeBrokerTarget")
	bed, err := sharedThreeBroker.get(func(ctx context.Context) (*Bed, error) {
		return StartBed(ctx, BedOptions{TargetBrokers: 3})
	}, func(b *Bed) {
		t.Logf("kafkatest: shared clusters with a three-broker target ready in %s (source %s, target %s)",
			b.ReadyIn.Round(time.Millisecond), b.Source.Bootstrap, b.Target.Bootstrap)
	})
	if err != nil {
		failUnavailable(t, "shared Kafka clusters with a three-broker target", err)
	}
	if bed.isClosed() {
		t.Fatal("shared Kafka clusters with a three-broker target were already torn down")
	}
	return bed
}
