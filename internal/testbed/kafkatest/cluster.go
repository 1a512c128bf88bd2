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
	"sync"
	"time"

	"github.com/IBM/sarama"
)

const (
	readyTimeout  = 90 * time.Second
	brokerGrace   = 15 * time.Second // controlled shutdown of one node takes 1–5 s
	pollInterval  = 200 * time.Millisecond
	startAttempts = 3 // a free port can be taken before the JVM binds it
)

// Cluster is one running Kafka cluster (KRaft) on 127.0.0.1: by default a
// single node that is both broker and controller, or several such nodes that
// form one controller quorum (BedOptions.TargetBrokers).
type Cluster struct {
	Alias     string // the MM2 cluster alias: "source" or "target" by default
	Bootstrap string // host:port of every node's PLAINTEXT listener, comma-separated
	ID        string // the cluster id it was formatted with
	Dir       string // config, data and logs; removed on close
	ReadyIn   time.Duration

	// ProxiedBootstrap and Faults, with BedOptions.FaultProxies: the
	// broker's address through the fault proxy, and the proxy.
	ProxiedBootstrap string
	Faults           *FaultProxy

	nodes      []*node // by node id: nodes[i] has id i+1
	extraPorts []int   // listeners beyond PLAINTEXT and CONTROLLER (clusterSpec)
}

// node is one JVM of a cluster, with what it was started with so that it can
// be started again on the same data, ports and id.
type node struct {
	id                        int32
	name                      string // of its console output file: kafka-<alias>[-<id>]
	addr                      string // host:port of the PLAINTEXT listener
	dir                       string // the node's config, data and logs
	proc                      *javaProc
	lib, logFile, serverProps string
	flags                     []string
}

// Pid is the process id of the first node's JVM: on a single-node cluster,
// the broker's. NodePids has every node's.
func (c *Cluster) Pid() int { return c.nodes[0].proc.pid() }

// Brokers are the PLAINTEXT addresses of the nodes, in node id order: what a
// Go client takes where Bootstrap is a comma-separated list.
func (c *Cluster) Brokers() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// LogTail returns the last n lines of each node's log and console output.
func (c *Cluster) LogTail(n int) string {
	if len(c.nodes) == 1 {
		return c.nodes[0].proc.tail(n)
	}
	var b strings.Builder
	for _, nd := range c.nodes {
		if nd.proc != nil {
			fmt.Fprintf(&b, "=== node %d ===\n%s", nd.id, nd.proc.tail(n))
		}
	}
	return b.String()
}

// startCluster formats and starts one cluster and waits until it is ready,
// retrying with fresh ports and a fresh dir when a port was taken meanwhile.
func startCluster(ctx context.Context, lib, alias, parent string) (*Cluster, error) {
	return startClusterSpec(ctx, lib, alias, parent, clusterSpec{})
}

// clusterSpec adds to the default cluster: more nodes, listeners on extra
// ports, server properties over the defaults (given every port: broker,
// controller, then the extra ones), and arguments to the storage format (SCRAM
// users). Extra ports, props and format arguments are for single-node
// clusters only.
type clusterSpec struct {
	nodes      int // 0 is 1
	extraPorts int
	props      func(ports []int) map[string]string
	formatArgs []string
	jvmFlags   []string
}

// startClusterSpec formats and starts one cluster and waits until it is
// ready, retrying with fresh ports and a fresh dir when a port was taken
// meanwhile.
func startClusterSpec(ctx context.Context, lib, alias, parent string, spec clusterSpec) (*Cluster, error) {
	spec.nodes = max(spec.nodes, 1)
	if spec.nodes > 1 && (spec.extraPorts > 0 || spec.props != nil || len(spec.formatArgs) > 0) {
		return nil, fmt.Errorf("start cluster %s: extra listeners, properties and format arguments need a single node", alias)
	}
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
	// Node i listens on ports[2i] (PLAINTEXT) and ports[2i+1] (CONTROLLER).
	ports, err := freePorts(2*spec.nodes + spec.extraPorts)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, alias+"-")
	if err != nil {
		return nil, fmt.Errorf("create cluster dir: %w", err)
	}
	c := &Cluster{Alias: alias, ID: newClusterID(), Dir: dir, extraPorts: ports[2*spec.nodes:]}
	defer func() {
		if err != nil {
			_ = c.close()
		}
	}()

	voters := make([]string, spec.nodes)      // id@host:port:directory-id: the initial quorum
	controllers := make([]string, spec.nodes) // host:port of each CONTROLLER listener
	for i := range spec.nodes {
		nd := &node{id: int32(i + 1), name: "kafka-" + alias, addr: "127.0.0.1:" + strconv.Itoa(ports[2*i]), dir: dir, lib: lib}
		if spec.nodes > 1 {
			nd.name = fmt.Sprintf("kafka-%s-%d", alias, nd.id)
			nd.dir = filepath.Join(dir, fmt.Sprintf("node-%d", nd.id))
			if err := os.Mkdir(nd.dir, 0o755); err != nil {
				return nil, fmt.Errorf("create node dir: %w", err)
			}
		}
		c.nodes = append(c.nodes, nd)
		controller := "127.0.0.1:" + strconv.Itoa(ports[2*i+1])
		controllers[i] = controller
		voters[i] = fmt.Sprintf("%d@%s:%s", nd.id, controller, newClusterID())
	}
	c.Bootstrap = strings.Join(c.Brokers(), ",")

	for i, nd := range c.nodes {
		props := serverProperties(ports[2*i], ports[2*i+1], filepath.Join(nd.dir, "data"))
		if spec.nodes > 1 {
			maps.Copy(props, quorumProperties(nd.id, controllers))
		}
		if spec.props != nil {
			maps.Copy(props, spec.props(ports))
		}
		if err := nd.writeConfig(props, spec.jvmFlags, spec.nodes > 1); err != nil {
			return nil, err
		}
	}

	// One node makes a dynamic quorum of itself (--standalone). Several are
	// formatted with the same cluster id and the whole voter set, each voter
	// with the directory id its metadata log dir gets, so they form one
	// quorum without adding voters one by one.
	quorumArgs := []string{"--standalone"}
	if spec.nodes > 1 {
		quorumArgs = []string{"--initial-controllers", strings.Join(voters, ",")}
	}
	formatErrs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		wg.Go(func() {
			if err := formatStorage(ctx, lib, nd.dir, c.ID, nd.serverProps, append(quorumArgs, spec.formatArgs...)...); err != nil {
				formatErrs[i] = fmt.Errorf("node %d: %w", nd.id, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(formatErrs...); err != nil {
		return nil, err
	}

	for _, nd := range c.nodes {
		if err := nd.start(); err != nil {
			return nil, err
		}
	}
	if err := c.waitNodes(ctx, c.nodes, nil); err != nil {
		return nil, err
	}
	c.ReadyIn = time.Since(start)
	return c, nil
}

// writeConfig writes the node's server.properties and log4j config into its
// dir and sets the JVM flags it runs with. Several nodes share a machine, so
// each gets a smaller heap.
func (nd *node) writeConfig(props map[string]string, jvmFlags []string, smallHeap bool) error {
	logDir := filepath.Join(nd.dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	nd.serverProps = filepath.Join(nd.dir, "server.properties")
	if err := writeProperties(nd.serverProps, props); err != nil {
		return err
	}
	log4j := filepath.Join(nd.dir, "log4j2.properties")
	nd.logFile = filepath.Join(logDir, "server.log")
	if err := os.WriteFile(log4j, []byte(log4j2Properties(nd.logFile)), 0o644); err != nil {
		return fmt.Errorf("write log4j config: %w", err)
	}
	nd.flags = append(append([]string{}, testJVMFlags...),
		"-Dlog4j2.configurationFile="+log4j,
		"-Dkafka.logs.dir="+logDir,
		"-Djava.io.tmpdir="+nd.dir, // native codecs unpack here; the system temp dir may be noexec
	)
	if smallHeap {
		nd.flags = append(nd.flags, multiNodeHeap...) // the last -Xms/-Xmx wins
	}
	nd.flags = append(nd.flags, jvmFlags...)
	return nil
}

// start starts the node's JVM.
func (nd *node) start() error {
	proc, err := startJava(nd.name, nd.lib, nd.dir, nd.logFile, nd.flags, "kafka.Kafka", nd.serverProps)
	if err != nil {
		return err
	}
	nd.proc = proc
	return nil
}

// formatStorage runs `kafka-storage.sh format` with the quorum arguments
// (--standalone or --initial-controllers) and any extra ones.
func formatStorage(ctx context.Context, lib, dir, id, serverProps string, extra ...string) error {
	java, err := javaBin()
	if err != nil {
		return err
	}
	args := append([]string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.io.tmpdir=" + dir,
		"-cp", filepath.Join(lib, "*"), "kafka.tools.StorageTool",
		"format", "-t", id, "-c", serverProps}, extra...)
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = childProcAttr()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("format storage: %w\n%s", err, tail(out, 30))
	}
	return nil
}

// waitNodes waits until each of nodes has logged "Kafka Server started" (past
// the log offset logged[i], if given: a restarted node's log already says so
// from its first start) and every running node's metadata lists every node as
// a broker. It fails fast with the log tail if a JVM exits.
func (c *Cluster) waitNodes(ctx context.Context, nodes []*node, logged []int64) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	started := make([]bool, len(nodes))
	for {
		var notStarted []int32
		for i, nd := range nodes {
			if nd.proc.exited() {
				return nd.exitError()
			}
			if !started[i] {
				var from int64
				if logged != nil {
					from = logged[i]
				}
				started[i] = nd.logContainsFrom("Kafka Server started", from)
			}
			if !started[i] {
				notStarted = append(notStarted, nd.id)
			}
		}
		var metaErr error
		if len(notStarted) == 0 {
			if metaErr = c.metadataOK(); metaErr == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			reason := fmt.Sprintf("no \"Kafka Server started\" in the log of node(s) %v", notStarted)
			if len(notStarted) == 0 {
				reason = fmt.Sprintf("metadata: %v", metaErr)
			}
			return fmt.Errorf("cluster %s not ready after %s: %s: %w\n%s", c.Alias, readyTimeout, reason, ctx.Err(), c.LogTail(40))
		case <-ticker.C:
		}
	}
}

// exitError explains why the node's JVM exited while it should have started.
func (nd *node) exitError() error {
	// The cause is usually far above the tail: a failed start logs its
	// whole shutdown after it. Look through the whole log.
	full := nd.proc.fullLog()
	if strings.Contains(full, "Address already in use") {
		return fmt.Errorf("%w: %s", errPortTaken, firstLine(full, "Address already in use"))
	}
	return fmt.Errorf("node %d exited early (%v): first error: %s\n%s", nd.id, nd.proc.waitErr, firstErrorLine(full), nd.proc.tail(40))
}

// logContainsFrom reports whether the node's log holds s past offset from.
func (nd *node) logContainsFrom(s string, from int64) bool {
	data, err := os.ReadFile(nd.logFile)
	return err == nil && int64(len(data)) > from && strings.Contains(string(data[from:]), s)
}

// metadataOK fetches metadata from each running node with a real client and
// wants each to list every node of the cluster as a broker.
func (c *Cluster) metadataOK() error {
	for _, nd := range c.nodes {
		if nd.proc == nil || nd.proc.exited() {
			continue
		}
		if err := c.nodeMetadataOK(nd); err != nil {
			return fmt.Errorf("node %d: %w", nd.id, err)
		}
	}
	return nil
}

func (c *Cluster) nodeMetadataOK(nd *node) error {
	cfg := c.SaramaConfig()
	cfg.Metadata.Retry.Max = 0
	cfg.Net.DialTimeout = 2 * time.Second
	client, err := sarama.NewClient([]string{nd.addr}, cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.RefreshMetadata(); err != nil {
		return err
	}
	if n := len(client.Brokers()); n != len(c.nodes) {
		return fmt.Errorf("metadata lists %d of %d brokers", n, len(c.nodes))
	}
	return nil
}

// close stops every node (SIGTERM, then SIGKILL) and removes the directory.
func (c *Cluster) close() error {
	if c.Faults != nil {
		c.Faults.close()
	}
	errs := make([]error, len(c.nodes)+1)
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		if nd.proc != nil {
			wg.Go(func() { errs[i] = nd.proc.stop(brokerGrace) })
		}
	}
	wg.Wait()
	if c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs[len(c.nodes)] = fmt.Errorf("remove %s: %w", c.Dir, err)
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
