package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

const (
	readyTimeout  = 90 * time.Second
	brokerGrace   = 15 * time.Second // controlled shutdown of one node takes 1–5 s
	pollInterval  = 200 * time.Millisecond
	startAttempts = 3 // a free port can be taken before the JVM binds it
)

// Cluster is one running single-node Kafka cluster (KRaft, combined broker
// and controller) on 127.0.0.1.
type Cluster struct {
	Alias     string // the MM2 cluster alias: "source" or "target" by default
	Bootstrap string // host:port of the PLAINTEXT listener
	ID        string // the cluster id it was formatted with
	Dir       string // config, data and logs; removed on close
	ReadyIn   time.Duration

	proc       *javaProc
	extraPorts []int // listeners beyond PLAINTEXT and CONTROLLER (clusterSpec)
	// What the broker was started with, so Restart can start it again.
	lib, logFile, serverProps string
	flags                     []string
}

// Pid is the broker JVM's process id.
func (c *Cluster) Pid() int { return c.proc.pid() }

// LogTail returns the last n lines of the broker's log and console output.
func (c *Cluster) LogTail(n int) string { return c.proc.tail(n) }

// clusterSpec adds to the default cluster: listeners on extra ports, server
// properties over the defaults (given every port: broker, controller, then the
// extra ones), and arguments to the storage format (SCRAM users).
type clusterSpec struct {
	extraPorts int
	props      func(ports []int) map[string]string
	formatArgs []string
	jvmFlags   []string
}

// startClusterSpec formats and starts one cluster and waits until it is
// ready, retrying with fresh ports and a fresh dir when a port was taken
// meanwhile.
func startClusterSpec(ctx context.Context, lib, alias, parent string, spec clusterSpec) (*Cluster, error) {
	var lastErr error
	for range startAttempts {
		c, err := startClusterOnce(ctx, lib, alias, parent, spec)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, fmt.Errorf("start cluster %s: %w", alias, lastErr)
}

var errPortTaken = errors.New("port already in use")

func startClusterOnce(ctx context.Context, lib, alias, parent string, spec clusterSpec) (_ *Cluster, err error) {
	start := time.Now()
	ports, err := freePorts(2 + spec.extraPorts)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, alias+"-")
	if err != nil {
		return nil, fmt.Errorf("create cluster dir: %w", err)
	}
	c := &Cluster{
		Alias:     alias,
		Bootstrap: "127.0.0.1:" + strconv.Itoa(ports[0]),
		ID:        newClusterID(),
		Dir:       dir,
	}
	defer func() {
		if err != nil {
			_ = c.close()
		}
	}()

	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	serverProps := filepath.Join(dir, "server.properties")
	props := serverProperties(ports[0], ports[1], filepath.Join(dir, "data"))
	c.extraPorts = ports[2:]
	if spec.props != nil {
		maps.Copy(props, spec.props(ports))
	}
	if err := writeProperties(serverProps, props); err != nil {
		return nil, err
	}
	log4j := filepath.Join(dir, "log4j2.properties")
	logFile := filepath.Join(logDir, "server.log")
	if err := os.WriteFile(log4j, []byte(log4j2Properties(logFile)), 0o644); err != nil {
		return nil, fmt.Errorf("write log4j config: %w", err)
	}
	if err := formatStorage(ctx, lib, dir, c.ID, serverProps, spec.formatArgs...); err != nil {
		return nil, err
	}

	flags := append(append([]string{}, testJVMFlags...),
		"-Dlog4j2.configurationFile="+log4j,
		"-Dkafka.logs.dir="+logDir,
		"-Djava.io.tmpdir="+dir, // native codecs unpack here; the system temp dir may be noexec
	)
	flags = append(flags, spec.jvmFlags...)
	c.lib, c.logFile, c.serverProps, c.flags = lib, logFile, serverProps, flags
	c.proc, err = startJava("kafka-"+alias, lib, dir, logFile, flags, "kafka.Kafka", serverProps)
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	c.ReadyIn = time.Since(start)
	return c, nil
}

// formatStorage runs `kafka-storage.sh format --standalone`: a single-node
// dynamic quorum, which needs controller.quorum.bootstrap.servers and no voters.
func formatStorage(ctx context.Context, lib, dir, id, serverProps string, extra ...string) error {
	java, err := javaBin()
	if err != nil {
		return err
	}
	args := append([]string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.io.tmpdir=" + dir,
		"-cp", filepath.Join(lib, "*"), "kafka.tools.StorageTool",
		"format", "-t", id, "-c", serverProps, "--standalone"}, extra...)
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = childProcAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("format storage: %w\n%s", err, tail(out, 30))
	}
	return nil
}

// waitReady waits for "Kafka Server started" in the log and then for a real
// metadata round trip, failing fast with the log tail if the JVM exits.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	logged := false
	for {
		if c.proc.exited() {
			// The cause is usually far above the tail: a failed start logs
			// its whole shutdown after it. Look through the whole log.
			full := c.proc.fullLog()
			if strings.Contains(full, "Address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, firstLine(full, "Address already in use"))
			}
			return fmt.Errorf("broker exited early (%v): first error: %s\n%s", c.proc.waitErr, firstErrorLine(full), c.proc.tail(40))
		}
		if !logged {
			logged = c.proc.logContains("Kafka Server started")
		}
		if logged && c.metadataOK() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			reason := "no \"Kafka Server started\" in the log"
			if logged {
				reason = fmt.Sprintf("metadata request failed: %v", c.metadataOK())
			}
			return fmt.Errorf("broker not ready after %s: %s: %w\n%s", readyTimeout, reason, ctx.Err(), c.proc.tail(40))
		case <-ticker.C:
		}
	}
}

// metadataOK fetches metadata with a real client and wants to see a broker.
func (c *Cluster) metadataOK() error {
	cfg := c.SaramaConfig()
	cfg.Metadata.Retry.Max = 0
	cfg.Net.DialTimeout = 2 * time.Second
	client, err := sarama.NewClient([]string{c.Bootstrap}, cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.RefreshMetadata(); err != nil {
		return err
	}
	if len(client.Brokers()) == 0 {
		return errors.New("metadata lists no brokers")
	}
	return nil
}

// close stops the broker (SIGTERM, then SIGKILL) and removes its directory.
func (c *Cluster) close() error {
	var errs []error
	if c.proc != nil {
		if err := c.proc.stop(brokerGrace); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", c.Dir, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close cluster %s: %w", c.Alias, err)
	}
	return nil
}

func firstLine(s, sub string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			return strings.TrimSpace(line)
		}
	}
	return sub
}

// firstErrorLine is the first ERROR line of a Kafka log, or a note that there
// was none.
func firstErrorLine(log string) string {
	if line := firstLine(log, " ERROR "); line != " ERROR " {
		return line
	}
	return "(no ERROR line logged)"
}
