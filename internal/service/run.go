// Package service is checkpointd's service, `checkpointd run`: every flow
// of a config, each a pipeline, with the metrics and health servers,
// tracing and profiles. It is the command's own code, apart so that another
// main runs exactly the same service with pipeline options of its own (the
// system benchmark's no-op handler, bench/scale/cmd/noophandler).
package service

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
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

// newLogger logs at the config's level and in its format (text or JSON).
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

// Run is `checkpointd run` with args (its flags: --config, --set,
// --cpuprofile, --memprofile): every flow of the config, with the metrics
// and health servers and tracing, until ctx ends or a flow fails. version
// is logged and reported to tracing. extra are pipeline options for every
// flow's pipeline, after the service's own (tracing); the logger and
// metrics of each flow come after them.
func Run(ctx context.Context, version string, args []string, stderr io.Writer, extra ...pipeline.Option) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf ConfigFlags
	cf.Register(fs)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for performance reports)")
	shadowMode := fs.Bool("shadow", false, "shadow mode: read and decide, write nothing to the target, compare with MM2 (checkpointd.shadow.enabled=true)")
	memProfile := fs.String("memprofile", "", "write a heap profile (allocations over the whole run, live heap at exit) to this file when the run ends, and the live heap at its largest to the file + \".peak\"")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *shadowMode {
		cf.Sets = append(cf.Sets, "checkpointd.shadow.enabled=true")
	}
	cfgs, err := cf.LoadFlows(stderr)
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
	opts = append(opts, extra...)

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
			if _, ok := p.ShadowReport(); ok {
				f.health.SetShadow(func() any { r, _ := p.ShadowReport(); return r })
			}
			t := p.Topics()
			log.Info("pipeline ready", "offset_syncs", t.OffsetSyncs, "checkpoints", t.Checkpoints,
				"sync_group_offsets", f.cfg.SyncGroupOffsets, "group_id", f.cfg.GroupID, "shadow", f.cfg.Shadow)
			if err := p.Run(gctx); err != nil {
				return fmt.Errorf("flow %s: %w", name, err)
			}
			return nil
		})
	}
	return g.Wait()
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
