package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bed is a pair of real Kafka clusters, source and target, with the MirrorMaker 2
// processes started on them.
type Bed struct {
	Source, Target *Cluster
	Lib            string        // the jar directory
	Dir            string        // parent of the clusters' dirs; removed on Close
	ReadyIn        time.Duration // from StartBed to both clusters ready

	mu     sync.Mutex
	mm2s   []*MM2
	closed bool
	oauth  *OAuthServer // a secured cluster's, closed after the brokers
	kdc    *KDC         // a secured cluster's, stopped after the brokers

	cancelStart context.CancelFunc
	started     chan struct{} // closed when StartBed no longer touches the bed
	closeOnce   sync.Once
	closeErr    error
}

// BedOptions configures StartBed. The zero value is the default bed.
type BedOptions struct {
	SourceAlias string // default "source"
	TargetAlias string // default "target"
	Lib         string // jar directory; default: Jars(ctx)
	// TargetBrokers is the number of nodes of the target cluster, each a
	// broker and a controller of one quorum; 0 is 1. With more, internal
	// topics and CreateTopic's topics are replicated to three of them, so
	// that group coordinators and partition leaders are spread out and one
	// node may be stopped (Cluster.StopNode).
	TargetBrokers int
	// ServerProps are broker properties over the defaults, for both
	// clusters (e.g. more __consumer_offsets partitions than the tests' 4).
	ServerProps map[string]string
	// FaultProxies puts a fault proxy (Cluster.Faults) in front of each
	// cluster, for clients that bootstrap on Cluster.ProxiedBootstrap.
	// Single-node clusters only.
	FaultProxies bool
}

const dirPrefix = "kafkatest-"

// StartBed formats and starts two clusters (the target of opts.TargetBrokers
// nodes) in parallel and waits until both
// are ready. The caller must Close the bed.
func StartBed(ctx context.Context, opts BedOptions) (*Bed, error) {
	start := time.Now()
	if opts.SourceAlias == "" {
		opts.SourceAlias = "source"
	}
	if opts.TargetAlias == "" {
		opts.TargetAlias = "target"
	}
	if opts.SourceAlias == opts.TargetAlias {
		return nil, fmt.Errorf("start bed: source and target alias are both %q", opts.SourceAlias)
	}
	if opts.TargetBrokers < 0 {
		return nil, fmt.Errorf("start bed: %d target brokers", opts.TargetBrokers)
	}
	lib := opts.Lib
	if lib == "" {
		var err error
		if lib, err = Jars(ctx); err != nil {
			return nil, fmt.Errorf("start bed: %w", err)
		}
	}
	if _, err := javaBin(); err != nil {
		return nil, fmt.Errorf("start bed: %w", err)
	}
	sweepStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("start bed: create dir: %w", err)
	}
	// The owner file lets a later run remove this dir if this process dies
	// without tearing down (a test timeout, SIGKILL).
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start bed: %w", err)
	}

	b := &Bed{Lib: lib, Dir: dir, started: make(chan struct{})}
	ctx, b.cancelStart = context.WithCancel(ctx)
	defer b.cancelStart()
	// Registered before the clusters start, so an interrupt during start-up
	// cancels it and removes what was started.
	register(b)
	var wg sync.WaitGroup
	var srcErr, tgtErr error
	var props func([]int) map[string]string
	if len(opts.ServerProps) > 0 {
		props = func([]int) map[string]string { return opts.ServerProps }
	}
	srcSpec, tgtSpec := clusterSpec{props: props}, clusterSpec{nodes: opts.TargetBrokers, props: props}
	if opts.FaultProxies {
		srcSpec, tgtSpec = proxiedSpec(srcSpec), proxiedSpec(tgtSpec)
	}
	wg.Go(func() {
		b.Source, srcErr = startClusterSpec(ctx, lib, opts.SourceAlias, dir, srcSpec)
		if srcErr == nil && opts.FaultProxies {
			srcErr = b.Source.startFaultProxy()
		}
	})
	wg.Go(func() {
		b.Target, tgtErr = startClusterSpec(ctx, lib, opts.TargetAlias, dir, tgtSpec)
		if tgtErr == nil && opts.FaultProxies {
			tgtErr = b.Target.startFaultProxy()
		}
	})
	wg.Wait()
	b.ReadyIn = time.Since(start)
	close(b.started)
	if err := errors.Join(srcErr, tgtErr); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("start bed: %w", err)
	}
	return b, nil
}

// Close stops MirrorMaker first (it would hang on vanished brokers), then both
// brokers in parallel, and removes every directory. Later and concurrent calls
// wait for the first to finish and return its result.
func (b *Bed) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.close() })
	return b.closeErr
}

func (b *Bed) close() error {
	b.cancelStart()
	<-b.started
	b.mu.Lock()
	b.closed = true
	mm2s := b.mm2s
	b.mm2s = nil
	b.mu.Unlock()
	defer unregister(b)

	var errs []error
	for _, m := range mm2s {
		if err := m.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	var wg sync.WaitGroup
	clusterErrs := make([]error, 2)
	for i, c := range []*Cluster{b.Source, b.Target} {
		if c != nil {
			wg.Go(func() { clusterErrs[i] = c.close() })
		}
	}
	wg.Wait()
	errs = append(errs, clusterErrs...)
	if b.oauth != nil {
		errs = append(errs, b.oauth.close())
	}
	errs = append(errs, b.kdc.close())
	if err := os.RemoveAll(b.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", b.Dir, err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close bed: %w", err)
	}
	return nil
}

// Pids are the process ids of every JVM the bed started that may still run.
func (b *Bed) Pids() []int {
	var pids []int
	for _, c := range []*Cluster{b.Source, b.Target} {
		if c != nil {
			pids = append(pids, c.NodePids()...)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.mm2s {
		pids = append(pids, m.Pid())
	}
	return pids
}

func (b *Bed) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func (b *Bed) addMM2(m *MM2) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errors.New("bed is closed")
	}
	b.mm2s = append(b.mm2s, m)
	return nil
}

func (b *Bed) removeMM2(m *MM2) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.mm2s {
		if x == m {
			b.mm2s = append(b.mm2s[:i], b.mm2s[i+1:]...)
			return
		}
	}
}

// sweepStaleDirs removes bed dirs whose owning test process is gone. Their
// JVMs died with it (Pdeathsig); only the files were left behind.
func sweepStaleDirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range matches {
		data, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // not ours, or still being created
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}
