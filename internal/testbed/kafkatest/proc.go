package kafkatest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// testJVMFlags start a JVM fast with little memory: C1 only and the serial GC
// shorten warm-up on small machines. They are not for benchmarks.
var testJVMFlags = []string{
	"-Xms256m", "-Xmx512m",
	"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
	"-XX:+PerfDisableSharedMem",
	"-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
}

// javaProc is one JVM this package started. Only its own pid is ever signalled.
type javaProc struct {
	name    string
	cmd     *exec.Cmd
	outPath string // stdout and stderr of the JVM
	logPath string // the log4j file appender's file
	done    chan struct{}
	waitErr error // set before done is closed
}

// javaBin prefers $JAVA_HOME/bin/java, as Kafka's scripts do.
func javaBin() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java not found on PATH (install Java 17)", ErrUnavailable)
	}
	return p, nil
}

// startJava starts mainClass with the jars in lib on the classpath. It does not
// use exec.CommandContext: the JVM must outlive the context that started it.
func startJava(name, lib, dir, logPath string, jvmFlags []string, mainClass string, args ...string) (*javaProc, error) {
	java, err := javaBin()
	if err != nil {
		return nil, err
	}
	outPath := filepath.Join(dir, name+".out")
	out, err := os.Create(outPath)
	if err != nil {
		return nil, fmt.Errorf("create %s output file: %w", name, err)
	}
	defer out.Close() // the child holds its own descriptor

	argv := append(append([]string{}, jvmFlags...), "-cp", filepath.Join(lib, "*"), mainClass)
	cmd := exec.Command(java, append(argv, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &javaProc{name: name, cmd: cmd, outPath: outPath, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *javaProc) pid() int { return p.cmd.Process.Pid }

func (p *javaProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM so the JVM's shutdown hooks run, and SIGKILL after grace.
func (p *javaProc) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s (pid %d): %w", p.name, p.pid(), err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	return p.kill()
}

// kill sends SIGKILL and waits until the JVM has exited.
func (p *javaProc) kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", p.name, p.pid(), err)
	}
	<-p.done
	return nil
}

// tail returns the last n lines of the JVM's log and of its console output,
// which is where a JVM that dies before log4j starts leaves its reason.
func (p *javaProc) tail(n int) string {
	var b strings.Builder
	for _, f := range []string{p.logPath, p.outPath} {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s (last %d lines) ---\n%s\n", filepath.Base(f), n, tail(data, n))
	}
	if b.Len() == 0 {
		return "(no output)"
	}
	return b.String()
}

// logContains reports whether the JVM's log file holds s.
// fullLog returns the log file and the captured stdout/stderr, whole.
func (p *javaProc) fullLog() string {
	var b strings.Builder
	for _, f := range []string{p.logPath, p.outPath} {
		if f == "" {
			continue
		}
		if data, err := os.ReadFile(f); err == nil {
			b.Write(data)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (p *javaProc) logContains(s string) bool {
	data, err := os.ReadFile(p.logPath)
	return err == nil && strings.Contains(string(data), s)
}

// processAlive reports whether pid names a live process (kill -0).
func processAlive(pid int) bool {
	proc, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return proc.Signal(syscall.Signal(0)) == nil
}
