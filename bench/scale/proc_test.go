//go:build linux

package scale

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds is the user+system CPU time of pid so far.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: fields count
	// from after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad stat line")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short stat line")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(f[12], 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (utime + stime) / clockTicks, nil
}

// statusKB reads a "Key:  N kB" line of /proc/<pid>/status (VmRSS, VmHWM, Threads).
func statusKB(pid int, key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				n, _ := strconv.ParseInt(fields[0], 10, 64)
				return n
			}
		}
	}
	return -1
}

func loadAvg1() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// cpuMeter accumulates the CPU time of a process whose pid may change (a
// restarted broker): each pid's last reading counts.
type cpuMeter struct {
	last map[int]float64
	base float64
}

func newCPUMeter(pids ...int) *cpuMeter {
	m := &cpuMeter{last: make(map[int]float64)}
	for _, p := range pids {
		m.read(p)
	}
	m.base = m.total()
	return m
}

func (m *cpuMeter) read(pid int) {
	if s, err := cpuSeconds(pid); err == nil {
		m.last[pid] = s
	}
}

func (m *cpuMeter) total() float64 {
	var s float64
	for _, v := range m.last {
		s += v
	}
	return s
}

// used is the CPU seconds since the meter was made.
func (m *cpuMeter) used() float64 { return m.total() - m.base }

// ---- checkpointd as a separate process -----------------------------------------------

// buildCheckpointd builds the binary from this module into dir: checkpointd,
// or with noop the same service plus no-op typed handlers, which takes the
// same command line.
func buildCheckpointd(t *testing.T, root, dir string, noop bool) string {
	t.Helper()
	pkg := "./cmd/checkpointd"
	if noop {
		pkg = "./bench/scale/cmd/noophandler"
	}
	bin := filepath.Join(dir, "checkpointd")
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// cpd is one running `checkpointd run`.
type cpd struct {
	cmd     *exec.Cmd
	addr    string // metrics and health
	logPath string
	done    chan struct{}
	err     error
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startCheckpointd writes the config (connector keys, as a managed Connect
// service hands them out, plus checkpointd's own) and runs the binary.
func startCheckpointd(t *testing.T, bin, dir string, props, extra map[string]string) *cpd {
	t.Helper()
	maps.Copy(props, extra)
	c := &cpd{addr: freeAddr(t), logPath: filepath.Join(dir, "checkpointd.log"), done: make(chan struct{})}
	props["checkpointd.metrics.address"] = c.addr
	props["checkpointd.health.address"] = c.addr
	var b strings.Builder
	for _, k := range sortedKeys(props) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	cfgPath := filepath.Join(dir, "checkpointd.properties")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	args := []string{"run", "--config", cfgPath}
	if prof := os.Getenv("CHECKPOINTD_SCALE_CPUPROFILE"); prof != "" {
		// A profile per start, named after the start's own folder.
		args = append(args, "--cpuprofile", filepath.Join(prof, filepath.Base(dir)+".cpu.pprof"),
			"--memprofile", filepath.Join(prof, filepath.Base(dir)+".heap.pprof"))
	}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	// checkpointd reads CHECKPOINTD_* as config: none of the harness's.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHECKPOINTD_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	c.cmd.Env = append(env, "OTEL_SDK_DISABLED=true")
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start checkpointd: %v", err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.stop()
		keepLog(t, c.logPath)
	})
	return c
}

// keepLog copies an instance's log into $CHECKPOINTD_SCALE_LOGS, if set,
// named after the test and its start folder, for reading a run afterwards.
func keepLog(t *testing.T, path string) {
	dir := os.Getenv("CHECKPOINTD_SCALE_LOGS")
	if dir == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err == nil {
		name := strings.NewReplacer("/", "_").Replace(t.Name()) + "-" + filepath.Base(filepath.Dir(path)) + ".log"
		err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	if err != nil {
		t.Logf("keep log %s: %v", path, err)
	}
}

func (c *cpd) pid() int { return c.cmd.Process.Pid }

func (c *cpd) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// waitReady polls /readyz: ready once the pipeline's gate is open.
func (c *cpd) waitReady(timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if c.exited() {
			return fmt.Errorf("checkpointd exited (%v):\n%s", c.err, c.logTail(30))
		}
		if resp, err := client.Get("http://" + c.addr + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("checkpointd not ready within %s:\n%s", timeout, c.logTail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probeReadyz asks /readyz every 100 ms until stop is called, which
// returns the number of probes, the slowest answer and how many answers
// took over a second (a probe that fails to answer within 10 s counts as
// 10 s).
func (c *cpd) probeReadyz() (stop func() (probes int, slowest time.Duration, over1s int)) {
	client := &http.Client{Timeout: 10 * time.Second}
	quit, done := make(chan struct{}), make(chan struct{})
	var probes, over1s int
	var slowest time.Duration
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			t0 := time.Now()
			resp, err := client.Get("http://" + c.addr + "/readyz")
			took := time.Since(t0)
			if err == nil {
				_ = resp.Body.Close()
			} else if c.exited() {
				return
			} else if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
				continue // not listening yet
			}
			probes++
			slowest = max(slowest, took)
			if took > time.Second {
				over1s++
			}
		}
	}()
	var once sync.Once
	return func() (int, time.Duration, int) {
		once.Do(func() { close(quit); <-done })
		return probes, slowest, over1s
	}
}

// scrape is what the harness reads from one checkpointd's /metrics.
type scrape struct {
	// ReaderLag sums checkpointd_reader_lag_records over the partitions of
	// __consumer_offsets (the commit reader); -1 when absent.
	ReaderLag float64
	// Pending is checkpointd_target_groups_pending: target groups with
	// checkpoints not yet committed; -1 when absent.
	Pending float64
	// Committed sums checkpointd_target_commits_total{reason="committed"}
	// (target partitions committed) by group label: "" when the instance
	// runs without checkpointd.metrics.group.labels.
	Committed map[string]float64
	// EventsDropped is checkpointd_events_dropped_total: events typed
	// handlers lost to a full queue (CHECKPOINTD_SCALE_NOOP_HANDLER); a
	// handler that drops does less work, so its overhead reads low.
	EventsDropped float64
}

// scrape reads c's /metrics once.
func (c *cpd) scrape(timeout time.Duration) (scrape, error) {
	out := scrape{ReaderLag: -1, Pending: -1, Committed: map[string]float64{}}
	client := &http.Client{Timeout: timeout}
	resp, err := client.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return out, fmt.Errorf("scrape checkpointd at %s: %w", c.addr, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "checkpointd_reader_lag_records":
			if strings.Contains(labels, `topic="__consumer_offsets"`) {
				out.ReaderLag = max(out.ReaderLag, 0) + v
			}
		case "checkpointd_events_dropped_total":
			out.EventsDropped += v
		case "checkpointd_target_groups_pending":
			out.Pending = max(out.Pending, 0) + v
		case "checkpointd_target_commits_total":
			if strings.Contains(labels, `reason="committed"`) {
				out.Committed[labelValue(labels, "group")] += v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("scrape checkpointd at %s: %w", c.addr, err)
	}
	return out, nil
}

// labelValue is the value of label name in a Prometheus label list
// (a="x",b="y"); "" when absent. Group names here need no unescaping.
func labelValue(labels, name string) string {
	for kv := range strings.SplitSeq(labels, ",") {
		if v, ok := strings.CutPrefix(kv, name+`="`); ok {
			return strings.TrimSuffix(v, `"`)
		}
	}
	return ""
}

func (c *cpd) logTail(n int) string {
	data, _ := os.ReadFile(c.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// stop sends SIGTERM and waits up to 20 s, then kills.
// saveMetrics keeps checkpointd's last /metrics scrape beside its CPU
// profile (CHECKPOINTD_SCALE_CPUPROFILE), for the latency histograms of
// each stage.
func (c *cpd) saveMetrics() {
	dir := os.Getenv("CHECKPOINTD_SCALE_CPUPROFILE")
	if dir == "" || c.exited() {
		return
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return
	}
	name := filepath.Base(filepath.Dir(c.logPath)) + ".metrics.txt"
	_ = os.WriteFile(filepath.Join(dir, name), body, 0o644)
}

func (c *cpd) stop() {
	if c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	select {
	case <-c.done:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
