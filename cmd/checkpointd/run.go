package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	runtimemetrics "runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/metrics"
	"github.com/checkpointd/checkpointd/infra/telemetry/otlp"
	"github.com/checkpointd/checkpointd/pipeline"
)

// configFlags are the flags every command that reads a config shares.
type configFlags struct {
	path string
	sets repeated
}

func (c *configFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.path, "config", "", "configuration file (YAML, JSON or .properties) with MM2 property names")
	fs.Var(&c.sets, "set", "override one property, key=value (repeatable)")
}

// load reads the config of one flow, prints its warnings, and fails on any
// problem.
func (c *configFlags) load(stderr io.Writer) (*config.Config, error) {
	if c.path == "" {
		return nil, fmt.Errorf("--config is required")
	}
	cfg, report, err := config.Load(c.path, c.sets, os.Environ())
	printWarnings(stderr, report)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadFlows reads the config of every flow (one, or each enabled flow of an
// MM2 driver file), prints its warnings, and fails on any problem.
func (c *configFlags) loadFlows(stderr io.Writer) ([]*config.Config, error) {
	if c.path == "" {
		return nil, fmt.Errorf("--config is required")
	}
	cfgs, report, err := config.LoadFlows(c.path, c.sets, os.Environ())
	printWarnings(stderr, report)
	if err != nil {
		return nil, err
	}
	return cfgs, nil
}

func printWarnings(w io.Writer, report *config.Report) {
	if report == nil {
		return
	}
	for _, issue := range report.Warnings {
		fmt.Fprintln(w, "warning:", issue)
	}
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(cfg.LogFormat, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func runService(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for performance reports)")
	memProfile := fs.String("memprofile", "", "write a heap profile (allocations over the whole run, live heap at exit) to this file when the run ends, and the live heap at its largest to the file + \".peak\"")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfgs, err := cf.loadFlows(stderr)
	if err != nil {
		return err
	}
	// The process's own settings (log, metrics and health addresses) are the
	// same in every flow: the config refuses flows that differ on them.
	cfg := cfgs[0]
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *memProfile != "" {
		defer writeHeapProfile(*memProfile, stderr)
		peakCtx, stopPeak := context.WithCancel(ctx)
		defer stopPeak()
		go watchHeapPeak(peakCtx, *memProfile+".peak", stderr)
	}
	logger := newLogger(cfg, stderr)
	slog.SetDefault(logger)
	names := make([]string, len(cfgs))
	for i, c := range cfgs {
		names[i] = c.String()
	}
	logger.Info("starting checkpointd", "version", version, "flows", strings.Join(names, ", "))

	var opts []pipeline.Option
	tracing, err := otlp.Setup(ctx, otlp.Options{ServiceVersion: version, Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(flushCtx); err != nil {
			logger.Warn("flushing traces failed", "error", err)
		}
	}()
	if tracing.Enabled() {
		opts = append(opts, pipeline.WithTracing(tracing.TracerProvider()), pipeline.WithPropagator(tracing.Propagator()))
	}

	// One metrics and health server for every flow: each flow's metrics carry
	// its source and target, and the process is ready when every flow is.
	flows := make([]*flow, len(cfgs))
	var reg *prometheus.Registry
	if cfg.MetricsAddress != "" {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	parts := make([]metrics.Part, len(cfgs))
	for i, c := range cfgs {
		f := &flow{cfg: c, health: &metrics.Health{}}
		if reg != nil {
			f.metrics = metrics.New(metrics.Config{Source: c.SourceAlias, Target: c.TargetAlias, GroupLabels: c.MetricsGroupLabels, Registry: reg})
		}
		flows[i], parts[i] = f, metrics.Part{Name: c.String(), Health: f.health}
	}
	health := flows[0].health
	if len(flows) > 1 {
		health = &metrics.Health{}
		health.Join(parts...)
	}
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	defer func() { stopServing(); <-served }()
	// Any flow's metrics serve the registry they all share.
	if err := serveObservability(serveCtx, cfg, flows[0].metrics, health, logger, served); err != nil {
		return err
	}

	err = runFlows(ctx, flows, opts, logger)
	logger.Info("checkpointd stopped", "error", err)
	return err
}

// flow is one source->target flow of the process.
type flow struct {
	cfg     *config.Config
	health  *metrics.Health
	metrics *metrics.Metrics // nil: metrics off
}

// runFlows builds and runs a pipeline per flow, all at once, until ctx ends
// or one of them fails, which stops the others. The error names the flow.
func runFlows(ctx context.Context, flows []*flow, opts []pipeline.Option, logger *slog.Logger) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, f := range flows {
		g.Go(func() error {
			name := f.cfg.String()
			log := logger.With("flow", name)
			fopts := append(slices.Clone(opts), pipeline.WithLogger(log))
			if f.metrics != nil {
				fopts = append(fopts, pipeline.WithMetrics(f.metrics))
			}
			startCtx, cancel := context.WithTimeout(gctx, f.cfg.AdminTimeout+30*time.Second)
			p, err := pipeline.New(startCtx, f.cfg, fopts...)
			cancel()
			if err != nil {
				return fmt.Errorf("flow %s: %w", name, err)
			}
			f.health.SetReady(p.Ready)
			f.health.SetStages(p.Stages)
			t := p.Topics()
			log.Info("pipeline ready", "offset_syncs", t.OffsetSyncs, "checkpoints", t.Checkpoints,
				"sync_group_offsets", f.cfg.SyncGroupOffsets, "group_id", f.cfg.GroupID)
			if err := p.Run(gctx); err != nil {
				return fmt.Errorf("flow %s: %w", name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf configFlags
	cf.register(fs)
	var handlers repeated
	fs.Var(&handlers, "handler", "name of a checkpoint handler your program adds with pipeline.WithCheckpointHandler, to list its consumer group (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cf.path == "" {
		return fmt.Errorf("--config is required")
	}
	handlerErr := checkHandlerNames(handlers)
	cfgs, report, err := config.LoadFlows(cf.path, cf.sets, os.Environ())
	for _, cfg := range cfgs {
		header := "# effective configuration (secrets redacted)"
		if len(cfgs) > 1 {
			header = "# flow " + cfg.String() + ": effective configuration (secrets redacted)"
		}
		fmt.Fprintln(stdout, header)
		var provided []string
		for _, kv := range cfg.Effective() {
			fmt.Fprintf(stdout, "%s=%s\n", kv.Key, kv.Value)
			if _, refs, ok := strings.Cut(kv.Origin, " via "); ok {
				provided = append(provided, fmt.Sprintf("#   %s <- %s", kv.Key, refs))
			}
		}
		if len(provided) > 0 {
			fmt.Fprintln(stdout, "# resolved from config providers:")
			fmt.Fprintln(stdout, strings.Join(provided, "\n"))
		}
		printConsumerGroups(stdout, cfg, handlers)
	}
	if report != nil {
		for _, w := range report.Warnings {
			fmt.Fprintln(stdout, "warning:", w)
		}
	}
	if err := errors.Join(err, handlerErr); err != nil {
		return err
	}
	if len(cfgs) > 1 {
		fmt.Fprintf(stdout, "configuration is valid: %d flows\n", len(cfgs))
		return nil
	}
	fmt.Fprintln(stdout, "configuration is valid")
	return nil
}

// serveObservability starts the metrics server (checkpointd.metrics.address)
// and the health endpoints (checkpointd.health.address): one server when the
// addresses are the same. served is closed when every server has stopped
// after ctx ends.
func serveObservability(ctx context.Context, cfg *config.Config, m *metrics.Metrics, h *metrics.Health, logger *slog.Logger, served chan<- struct{}) error {
	var servers []*metrics.Server
	listen := func(addr string, m *metrics.Metrics, h *metrics.Health) error {
		srv, err := metrics.Listen(addr, m, h, logger)
		if err != nil {
			return err
		}
		servers = append(servers, srv)
		return nil
	}
	var err error
	switch {
	case cfg.MetricsAddress != "" && cfg.MetricsAddress == cfg.HealthAddress:
		err = listen(cfg.MetricsAddress, m, h)
	default:
		if cfg.MetricsAddress != "" {
			err = listen(cfg.MetricsAddress, m, nil)
		}
		if err == nil && cfg.HealthAddress != "" {
			err = listen(cfg.HealthAddress, nil, h)
		}
	}
	done := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { done <- srv.Serve(ctx) }()
	}
	if err != nil {
		// Stop what was started; the caller's deferred wait sees served closed.
		go func() {
			for range servers {
				<-done
			}
			close(served)
		}()
		return err
	}
	go func() {
		for range servers {
			if err := <-done; err != nil {
				logger.Error("metrics/health server stopped", "error", err)
			}
		}
		close(served)
	}()
	return nil
}

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
