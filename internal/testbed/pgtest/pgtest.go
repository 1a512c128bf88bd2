// Package pgtest starts a real PostgreSQL for tests, with
// github.com/fergusstrange/embedded-postgres (binaries fetched once from
// Maven Central into a cache).
//
// PostgreSQL refuses to run as root (initdb: "cannot be run as root"), and
// embedded-postgres has no option for another user: its maintainers' advice
// is to run the tests as an unprivileged user. CI runs tests as root, so the
// server is never started in the test process: Start runs the test binary
// again as a helper (RunMain intercepts it) which, when it was started as
// root, first drops to the user "nobody", then starts PostgreSQL, prints
// its address and keeps it up until its stdin closes. Closing stdin is also
// what stops it when the test process dies.
//
// Wire it up with
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }
package pgtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"
)

// Environment of the helper process.
const (
	envServe = "CHECKPOINTD_PGTEST_SERVE" // the runtime directory; set only in the helper
	envCache = "CHECKPOINTD_PGTEST_CACHE" // where the binaries' archive is kept
)

const (
	database = "checkpointd"
	username = "checkpointd"
	password = "checkpointd"
	// startTimeout bounds the helper's start: a first run downloads the
	// binaries (tens of MB) before initdb.
	startTimeout = 5 * time.Minute
)

// RunMain runs the package's tests, or is the helper that serves
// PostgreSQL when Start started the test binary as one.
func RunMain(m *testing.M) int { return RunMainWith(m, (*testing.M).Run) }

// RunMainWith is RunMain for a package whose tests need another TestMain
// too (e.g. kafkatest.RunMain): run runs the tests, and the helper never
// calls it, so it starts nothing of its own.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.RunMainWith(m, kafkatest.RunMain)) }
func RunMainWith(m *testing.M, run func(*testing.M) int) int {
	if dir := os.Getenv(envServe); dir != "" {
		if err := serve(dir, os.Getenv(envCache), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 1
		}
		return 0
	}
	return run(m)
}

// Start starts a PostgreSQL for t and returns its connection string
// (database checkpointd); it is stopped and removed when t ends. With
// -short it skips t unless CI is set; when PostgreSQL cannot be started it
// fails t: a CI run must not pass without it.
func Start(t testing.TB) string {
	t.Helper()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("integration test: starts PostgreSQL (run without -short)")
	}
	dsn, err := start(t)
	if err != nil {
		t.Fatalf("integration test needs a real PostgreSQL, which embedded-postgres fetches from Maven Central and runs as an unprivileged user: %v", err)
	}
	return dsn
}

func start(t testing.TB) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the test binary: %w", err)
	}
	owner, err := serverUser()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return "", fmt.Errorf("runtime dir: %w", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cache, err := cacheDir(owner)
	if err != nil {
		return "", err
	}
	if err := owner.chown(dir); err != nil {
		return "", err
	}

	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envServe+"="+dir, envCache+"="+cache)
	cmd.Stderr = testWriter{t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", fmt.Errorf("helper: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("helper: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start helper: %w", err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		stdin.Close() // the helper stops PostgreSQL and exits
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Errorf("pgtest: the PostgreSQL helper did not stop within a minute")
		}
	})

	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if dsn, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- dsn
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	select {
	case dsn := <-ready:
		return dsn, nil
	case err := <-exited:
		exited <- err // for the cleanup
		return "", fmt.Errorf("the PostgreSQL helper exited before it was ready (%v; does the package's TestMain call pgtest.RunMain?); its output is in the test log", err)
	case <-time.After(startTimeout):
		return "", fmt.Errorf("PostgreSQL not ready within %s", startTimeout)
	}
}

// account is the user that runs PostgreSQL: this process's own, or nobody
// when it is root.
type account struct {
	uid, gid int
	root     bool // this process runs as root: the helper drops to uid, gid
}

func serverUser() (account, error) {
	if os.Geteuid() != 0 {
		return account{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return account{}, fmt.Errorf("running as root, and PostgreSQL must not: no user nobody to run it as: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return account{}, fmt.Errorf("user nobody: %w", err)
	}
	return account{uid: uid, gid: gid, root: true}, nil
}

func (a account) chown(path string) error {
	if !a.root {
		return nil
	}
	if err := os.Chown(path, a.uid, a.gid); err != nil {
		return fmt.Errorf("hand %s to uid %d: %w", path, a.uid, err)
	}
	return nil
}

// cacheDir is where the binaries' archive is kept between runs: under the
// user cache dir, or, for nobody (who has no home), a directory of its own
// in the temp dir. A directory there that someone else owns is not used.
func cacheDir(a account) (string, error) {
	if !a.root {
		if base, err := os.UserCacheDir(); err == nil {
			return filepath.Join(base, "checkpointd", "embedded-postgres"), nil
		}
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("checkpointd-pgtest-cache-%d", a.uid))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("binaries cache: %w", err)
	}
	if err := a.chown(dir); err != nil {
		return "", err
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("binaries cache: %w", err)
	}
	if int(st.Uid) != a.uid || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return "", fmt.Errorf("binaries cache %s is not a directory of uid %d", dir, a.uid)
	}
	return dir, nil
}

// serve is the helper: it drops root if it has it, starts PostgreSQL under
// dir, writes "ready <dsn>" to out, and stops it when in ends.
func serve(dir, cache string, in io.Reader, out io.Writer) error {
	a, err := serverUser()
	if err != nil {
		return err
	}
	if a.root {
		// Go applies these to every thread of the process (Linux).
		if err := errors.Join(syscall.Setgroups(nil), syscall.Setgid(a.gid), syscall.Setuid(a.uid)); err != nil {
			return fmt.Errorf("drop root for uid %d: %w", a.uid, err)
		}
	}
	// initdb looks up its working directory, which nobody may not read.
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("helper: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	pg := embeddedpostgres.NewDatabase(embeddedpostgres.DefaultConfig().
		Port(port).Database(database).Username(username).Password(password).
		CachePath(cache).RuntimePath(filepath.Join(dir, "runtime")).
		StartTimeout(time.Minute).Logger(os.Stderr))
	if err := pg.Start(); err != nil {
		return fmt.Errorf("start PostgreSQL: %w", err)
	}
	fmt.Fprintf(out, "ready postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable\n", username, password, port, database)
	_, _ = io.Copy(io.Discard, in)
	if err := pg.Stop(); err != nil {
		return fmt.Errorf("stop PostgreSQL: %w", err)
	}
	return nil
}

// freePort is a loopback port nothing listens on now; embedded-postgres
// needs a number, not a listener.
func freePort() (uint32, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return uint32(l.Addr().(*net.TCPAddr).Port), nil
}

// testWriter sends the helper's output (PostgreSQL's log) to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("postgres: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
