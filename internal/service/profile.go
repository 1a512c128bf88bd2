package service

import (
	"context"
	"fmt"
	"io"
	"os"
	runtimemetrics "runtime/metrics"
	"runtime/pprof"
	"time"
)

// startCPUProfile profiles the process into path until the returned
// function is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeHeapProfile writes the heap profile to path; a failure is reported,
// not returned, since the run itself is over.
func writeHeapProfile(path string, stderr io.Writer) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "heap profile %s: %v\n", path, err)
	}
}

// watchHeapPeak writes the heap profile to path each time the live heap (as
// of the last GC, the same moment the profile's in-use figures describe)
// is a tenth larger than when it last wrote it, so path ends up showing
// what was live at about the largest heap of the run, which sets the RSS
// peak and which the profile at exit does not show.
func watchHeapPeak(ctx context.Context, path string, stderr io.Writer) {
	sample := []runtimemetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var written uint64
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		runtimemetrics.Read(sample)
		if heap := sample[0].Value.Uint64(); heap > written+written/10 {
			written = heap
			writeHeapProfile(path, stderr)
		}
	}
}
