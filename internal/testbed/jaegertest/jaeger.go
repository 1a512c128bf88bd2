package jaegertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bounds for a shared two-core machine; they fail a hang, they measure nothing.
const (
	// BuildTimeout bounds a first, cold build inside a test; `go run ./internal/testbed/jaegertest/cmd/buildjaeger`
	// builds ahead of the tests instead.
	BuildTimeout = 30 * time.Minute
	readyTimeout = 30 * time.Second
	stopGrace    = 5 * time.Second
)

// Jaeger is one running all-in-one process. Every listener is on 127.0.0.1.
type Jaeger struct {
	// OTLPHTTP and OTLPGRPC are the host:port of the OTLP receivers.
	OTLPHTTP, OTLPGRPC string
	// QueryURL is the base URL of the query service's HTTP API.
	QueryURL string
	// AdminURL is the base URL of the admin server (health check, metrics).
	AdminURL string
	// ReadyIn is how long the process took to answer after it started.
	ReadyIn time.Duration

	cmd     *exec.Cmd
	outPath string
	done    chan struct{}
	waitErr error // set before done is closed
}

// Start builds Jaeger if needed (see Binary), starts it in a directory of
// t.TempDir() and stops it when the test ends. It skips with -short and fails
// the test when Jaeger cannot be built or started.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	if testing.Short() {
		t.Skip("jaegertest: real Jaeger not started with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), BuildTimeout)
	defer cancel()
	began := time.Now()
	bin, err := Binary(ctx)
	if err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Logf("jaegertest: built jaeger v%s in %s", Version, d.Round(time.Second))
	}
	j, err := Run(context.Background(), bin, t.TempDir())
	if err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	t.Cleanup(func() {
		if err := j.Stop(); err != nil {
			t.Errorf("jaegertest: %v", err)
		}
	})
	t.Logf("jaegertest: jaeger v%s ready in %s: OTLP/HTTP %s, query %s", Version, j.ReadyIn.Round(time.Millisecond), j.OTLPHTTP, j.QueryURL)
	return j
}

// Run starts the binary bin with its output in dir, on free loopback ports,
// and waits until it is ready. A port taken by another process between the
// pick and the bind is retried with new ones.
func Run(ctx context.Context, bin, dir string) (*Jaeger, error) {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var j *Jaeger
		if j, err = run(ctx, bin, dir, attempt); err == nil {
			return j, nil
		}
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, err
}

var errPortTaken = errors.New("port taken")

func run(ctx context.Context, bin, dir string, attempt int) (*Jaeger, error) {
	ports, err := freePorts(7)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	j := &Jaeger{
		OTLPHTTP: addr(0),
		OTLPGRPC: addr(1),
		QueryURL: "http://" + addr(2),
		AdminURL: "http://" + addr(3),
		outPath:  filepath.Join(dir, fmt.Sprintf("jaeger-%d.out", attempt)),
		done:     make(chan struct{}),
	}
	out, err := os.Create(j.outPath)
	if err != nil {
		return nil, fmt.Errorf("create jaeger output file: %w", err)
	}
	defer out.Close() // the child holds its own descriptor
	// Every listener of the v1 all-in-one, on loopback (Zipkin is off by
	// default, the agent is gone from v1.75).
	cmd := exec.Command(bin,
		"--collector.otlp.enabled=true",
		"--collector.otlp.http.host-port="+j.OTLPHTTP,
		"--collector.otlp.grpc.host-port="+j.OTLPGRPC,
		"--query.http-server.host-port="+addr(2),
		"--admin.http.host-port="+addr(3),
		"--collector.http-server.host-port="+addr(4),
		"--collector.grpc-server.host-port="+addr(5),
		"--query.grpc-server.host-port="+addr(6),
		"--memory.max-traces=100000",
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = jaegerEnv(j.OTLPGRPC)
	cmd.SysProcAttr = childProcAttr()
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start jaeger: %w", err)
	}
	j.cmd = cmd
	go func() {
		j.waitErr = cmd.Wait()
		close(j.done)
	}()
	if err := j.waitReady(ctx); err != nil {
		_ = j.Stop()
		log := j.LogTail(40)
		if strings.Contains(log, "address already in use") {
			return nil, fmt.Errorf("%w: %v\n%s", errPortTaken, err, log)
		}
		return nil, fmt.Errorf("jaeger not ready: %v\njaeger output:\n%s", err, log)
	}
	j.ReadyIn = time.Since(began)
	return j, nil
}

// jaegerEnv is the caller's environment without its OTEL_* settings: Jaeger
// traces itself with the OpenTelemetry SDK, so its own tracing is switched
// off, and pointed at its own receiver rather than the default port 4317.
func jaegerEnv(selfOTLP string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "SPAN_STORAGE_TYPE=") {
			env = append(env, kv)
		}
	}
	return append(env,
		"SPAN_STORAGE_TYPE=memory",
		"OTEL_TRACES_SAMPLER=always_off",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+selfOTLP,
	)
}

// waitReady polls until the admin health check says the server is available,
// the query API answers and the OTLP/HTTP receiver accepts connections.
func (j *Jaeger) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		select {
		case <-j.done:
			return fmt.Errorf("exited: %v", j.waitErr)
		default:
		}
		if last = j.probe(ctx, client); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %s: %v", readyTimeout, last)
		case <-j.done:
			return fmt.Errorf("exited: %v", j.waitErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (j *Jaeger) probe(ctx context.Context, client *http.Client) error {
	for _, url := range []string{j.AdminURL + "/", j.QueryURL + "/api/services"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
	}
	c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", j.OTLPHTTP)
	if err != nil {
		return err
	}
	return c.Close()
}

// OTLPEndpoint is the value for OTEL_EXPORTER_OTLP_ENDPOINT with the
// http/protobuf protocol.
func (j *Jaeger) OTLPEndpoint() string { return "http://" + j.OTLPHTTP }

// Stop sends SIGTERM, then SIGKILL after a grace period, and waits for the
// process to exit. Only its own pid is signalled. Storage is in memory, so
// nothing is lost by the kill.
func (j *Jaeger) Stop() error {
	if j.cmd == nil {
		return nil
	}
	select {
	case <-j.done:
		return nil
	default:
	}
	pid := j.cmd.Process.Pid
	if err := j.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal jaeger (pid %d): %w", pid, err)
	}
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-j.done:
		return nil
	case <-timer.C:
	}
	if err := j.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill jaeger (pid %d): %w", pid, err)
	}
	<-j.done
	return nil
}

// LogTail returns the last n lines of Jaeger's output.
func (j *Jaeger) LogTail(n int) string {
	data, err := os.ReadFile(j.outPath)
	if err != nil {
		return fmt.Sprintf("(no output: %v)", err)
	}
	return tail(data, n)
}

// freePorts asks the kernel for n distinct free ports on 127.0.0.1; all
// listeners are held until every port is picked, so the n differ.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Pid is the process id of Jaeger.
func (j *Jaeger) Pid() int { return j.cmd.Process.Pid }
