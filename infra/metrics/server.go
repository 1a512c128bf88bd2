package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyFunc reports why the service is not ready, or nil when it is.
type ReadyFunc func(ctx context.Context) error

// Health answers /healthz and /readyz. Until a readiness check is set, the
// service is alive but not ready.
type Health struct {
	mu    sync.Mutex
	ready ReadyFunc
}

// SetReady sets the readiness check.
func (h *Health) SetReady(f ReadyFunc) {
	h.mu.Lock()
	h.ready = f
	h.mu.Unlock()
}

// Ready runs the readiness check.
func (h *Health) Ready(ctx context.Context) error {
	h.mu.Lock()
	f := h.ready
	h.mu.Unlock()
	if f == nil {
		return errors.New("starting")
	}
	return f(ctx)
}

// readyTimeout bounds one readiness check: /readyz answers within a second,
// whatever the clusters do (the probes wait for them at most probeWait).
const readyTimeout = 900 * time.Millisecond

// Register adds /healthz and /readyz to mux.
func (h *Health) Register(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := h.Ready(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", err)
			return
		}
		fmt.Fprintln(w, "ready")
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
