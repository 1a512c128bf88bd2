package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyFunc reports why the service is not ready, or nil when it is.
type ReadyFunc func(ctx context.Context) error

// Health answers /healthz and /readyz. Until a readiness check is set, the
// service is alive but not ready. A process running several flows joins a
// Health per flow into one (Join): ready when every flow is, with a line per
// flow in the bodies.
type Health struct {
	mu     sync.Mutex
	ready  ReadyFunc
	stages func() []string // what the part is made of, for the bodies; nil: not said
	parts  []Part
	shadow func() any // the shadow-mode report, served as JSON at /shadow; nil: none
}

// Part is one part of the service with a readiness of its own, such as one
// flow of several.
type Part struct {
	Name   string
	Health *Health
}

// SetReady sets the readiness check.
func (h *Health) SetReady(f ReadyFunc) {
	h.mu.Lock()
	h.ready = f
	h.mu.Unlock()
}

// SetStages sets what names the stages the readiness check covers, for the
// lines of a part in its whole's bodies.
func (h *Health) SetStages(f func() []string) {
	h.mu.Lock()
	h.stages = f
	h.mu.Unlock()
}

// SetShadow sets the report /shadow serves (shadow mode): f's value as JSON.
func (h *Health) SetShadow(f func() any) {
	h.mu.Lock()
	h.shadow = f
	h.mu.Unlock()
}

// shadowReports returns the reports of h and its parts that run in shadow
// mode.
func (h *Health) shadowReports() []any {
	h.mu.Lock()
	f, parts := h.shadow, h.parts
	h.mu.Unlock()
	var out []any
	if f != nil {
		out = append(out, f())
	}
	for _, p := range parts {
		out = append(out, p.Health.shadowReports()...)
	}
	return out
}

// Join makes h ready when every part is, and names each part, its state and
// its stages on a line of its own in /readyz and /healthz.
func (h *Health) Join(parts ...Part) {
	h.mu.Lock()
	h.parts = parts
	h.ready = nil
	h.mu.Unlock()
}

// Ready runs the readiness check: of every part at once, if h has parts.
func (h *Health) Ready(ctx context.Context) error {
	h.mu.Lock()
	f, parts := h.ready, h.parts
	h.mu.Unlock()
	if len(parts) > 0 {
		var reasons []string
		for i, err := range readyParts(ctx, parts) {
			if err != nil {
				reasons = append(reasons, parts[i].Name+": "+err.Error())
			}
		}
		if len(reasons) > 0 {
			return errors.New(strings.Join(reasons, "; "))
		}
		return nil
	}
	if f == nil {
		return errors.New("starting")
	}
	return f(ctx)
}

// readyParts checks the parts concurrently: each may wait for its clusters
// for a while, and /readyz answers within readyTimeout however many there are.
func readyParts(ctx context.Context, parts []Part) []error {
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { errs[i] = p.Health.Ready(ctx) })
	}
	wg.Wait()
	return errs
}

// partLines are the lines naming each part, its state (state when ready, or
// "not ready: why") and its stages.
func (h *Health) partLines(parts []Part, errs []error, state string) string {
	var b strings.Builder
	for i, p := range parts {
		fmt.Fprintf(&b, "%s: ", p.Name)
		if errs != nil && errs[i] != nil {
			fmt.Fprintf(&b, "not ready: %v", errs[i])
		} else {
			b.WriteString(state)
		}
		p.Health.mu.Lock()
		stages := p.Health.stages
		p.Health.mu.Unlock()
		if stages != nil {
			fmt.Fprintf(&b, " (stages: %s)", strings.Join(stages(), ", "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// readyTimeout bounds one readiness check: /readyz answers within a second,
// whatever the clusters do (the probes wait for them at most probeWait).
const readyTimeout = 900 * time.Millisecond

// Register adds /healthz, /readyz and /shadow to mux.
func (h *Health) Register(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
		h.mu.Lock()
		parts := h.parts
		h.mu.Unlock()
		fmt.Fprint(w, h.partLines(parts, nil, "running"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		h.mu.Lock()
		parts := h.parts
		h.mu.Unlock()
		if len(parts) == 0 {
			if err := h.Ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, "not ready:", err)
				return
			}
			fmt.Fprintln(w, "ready")
			return
		}
		errs := readyParts(ctx, parts)
		var failing []string
		for i, err := range errs {
			if err != nil {
				failing = append(failing, parts[i].Name)
			}
		}
		if len(failing) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", strings.Join(failing, ", "))
		} else {
			fmt.Fprintln(w, "ready")
		}
		fmt.Fprint(w, h.partLines(parts, errs, "ready"))
	})
	mux.HandleFunc("/shadow", func(w http.ResponseWriter, _ *http.Request) {
		reports := h.shadowReports()
		if len(reports) == 0 {
			http.Error(w, "no flow runs in shadow mode (checkpointd.shadow.enabled)", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // flows are named A->B
		if err := enc.Encode(reports); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// Handler serves /metrics from the registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Server is the HTTP server of metrics and health endpoints.
type Server struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
}

// Listen binds addr and prepares a server with /metrics (when m is not nil),
// /healthz and /readyz (when h is not nil). Serve it with Serve.
func Listen(addr string, m *Metrics, h *Health, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.Default()
	}
	mux := http.NewServeMux()
	if m != nil {
		mux.Handle("/metrics", m.Handler())
	}
	if h != nil {
		h.Register(mux)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics and health server on %s: %w", addr, err)
	}
	return &Server{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:  ln,
		log: logger,
	}, nil
}

// Addr is the address the server listens on (with the port chosen for ":0").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until ctx ends, then shuts down.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	s.log.Info("serving metrics and health", "address", s.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(shutdownCtx)
	<-errc
	return err
}
