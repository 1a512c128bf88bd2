package kafkatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// ConnectJVMFlags are the JVM flags connect-standalone.sh uses by default:
// what users of a Connect worker run with. Benchmarks compare at these, not
// at the small-heap test flags.
var ConnectJVMFlags = []string{
	"-Xms256M", "-Xmx2G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
	"-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
}

// CheckpointConnectorOptions configures MM2's MirrorCheckpointConnector run
// alone in a Kafka Connect standalone worker (ConnectStandalone), as managed
// Connect services run it. Something else must write the offset syncs: a
// MirrorSourceConnector started with StartMM2, or the code under test.
type CheckpointConnectorOptions struct {
	Groups string // "groups": comma-separated regexes; default ".*"
	Topics string // "topics"; default ".*"

	CheckpointInterval       time.Duration // emit.checkpoints.interval.seconds; default 1 s
	SyncGroupOffsetsInterval time.Duration // sync.group.offsets.interval.seconds; default 1 s
	RefreshGroupsInterval    time.Duration // refresh.groups.interval.seconds; default 2 s

	// JVMFlags default to ConnectJVMFlags.
	JVMFlags []string

	// Extra connector and worker properties, over the defaults.
	Extra, WorkerExtra map[string]string
}

// StartCheckpointConnector starts a Connect standalone worker on the target
// cluster running MirrorCheckpointConnector for source->target with
// sync.group.offsets.enabled=true, and waits until the REST API reports its
// task RUNNING (the connector starts no task before its first group listing
// finds a group, so commit the groups first). The worker is stopped when the
// test ends, or by Stop; it is tracked like an MM2 process, so Pid, LogTail
// and Stop work the same way.
func (b *Bed) StartCheckpointConnector(t testing.TB, opts CheckpointConnectorOptions) *MM2 {
	t.Helper()
	m := &MM2{Name: UniqueName(t, "mm2-checkpoint"), bed: b, SourceAlias: b.Source.Alias, TargetAlias: b.Target.Alias}
	dir, err := os.MkdirTemp(b.Dir, "connect-")
	if err != nil {
		t.Fatalf("start connect: create dir: %v", err)
	}
	m.Dir = dir
	ports, err := freePorts(1)
	if err != nil {
		t.Fatalf("start connect: %v", err)
	}
	rest := "127.0.0.1:" + strconv.Itoa(ports[0])
	const bytes = "org.apache.kafka.connect.converters.ByteArrayConverter"
	worker := map[string]string{
		"bootstrap.servers":            b.Target.Bootstrap,
		"key.converter":                bytes,
		"value.converter":              bytes,
		"header.converter":             bytes,
		"offset.storage.file.filename": filepath.Join(dir, "connect.offsets"),
		"offset.flush.interval.ms":     "1000",
		"listeners":                    "http://" + rest,
		"plugin.discovery":             "service_load",
	}
	maps.Copy(worker, opts.WorkerExtra)
	conn := map[string]string{
		"name":                                 m.Name,
		"connector.class":                      "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
		"tasks.max":                            "1",
		"source.cluster.alias":                 b.Source.Alias,
		"target.cluster.alias":                 b.Target.Alias,
		"source.cluster.bootstrap.servers":     b.Source.Bootstrap,
		"target.cluster.bootstrap.servers":     b.Target.Bootstrap,
		"groups":                               cmp.Or(opts.Groups, ".*"),
		"topics":                               cmp.Or(opts.Topics, ".*"),
		"emit.checkpoints.enabled":             "true",
		"emit.checkpoints.interval.seconds":    seconds(opts.CheckpointInterval),
		"sync.group.offsets.enabled":           "true",
		"sync.group.offsets.interval.seconds":  seconds(opts.SyncGroupOffsetsInterval),
		"refresh.groups.interval.seconds":      seconds(cmp.Or(opts.RefreshGroupsInterval, 2*time.Second)),
		"checkpoints.topic.replication.factor": "1",
		"key.converter":                        bytes,
		"value.converter":                      bytes,
		"header.converter":                     bytes,
	}
	maps.Copy(conn, opts.Extra)
	workerPath := filepath.Join(dir, "worker.properties")
	connPath := filepath.Join(dir, "checkpoint.properties")
	for path, props := range map[string]map[string]string{workerPath: worker, connPath: conn} {
		if err := writeProperties(path, props); err != nil {
			t.Fatalf("start connect: %v", err)
		}
	}
	log4j := filepath.Join(dir, "log4j2.properties")
	logFile := filepath.Join(dir, "connect.log")
	if err := os.WriteFile(log4j, []byte(log4j2Properties(logFile)), 0o644); err != nil {
		t.Fatalf("start connect: write log4j config: %v", err)
	}
	jvm := opts.JVMFlags
	if len(jvm) == 0 {
		jvm = ConnectJVMFlags
	}
	flags := append(append([]string{}, jvm...),
		"-Dlog4j2.configurationFile="+log4j, "-Djava.io.tmpdir="+dir)
	start := time.Now()
	m.proc, err = startJava("connect", b.Lib, dir, logFile, flags,
		"org.apache.kafka.connect.cli.ConnectStandalone", workerPath, connPath)
	if err != nil {
		t.Fatalf("start connect: %v", err)
	}
	if err := b.addMM2(m); err != nil {
		_ = m.stop()
		t.Fatalf("start connect: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Errorf("stop connect: %v", err)
		}
	})
	if err := m.waitTaskRunning(rest); err != nil {
		t.Fatalf("start connect: %v\n%s", err, m.LogTail(60))
	}
	m.ReadyIn = time.Since(start)
	return m
}

// waitTaskRunning polls GET /connectors/<name>/status until a task is RUNNING.
func (m *MM2) waitTaskRunning(rest string) error {
	url := "http://" + rest + "/connectors/" + m.Name + "/status"
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(mm2ReadyTimeout)
	var last string
	for {
		if m.proc.exited() {
			return fmt.Errorf("connect worker exited early (%v)", m.proc.waitErr)
		}
		if resp, err := client.Get(url); err != nil {
			last = err.Error()
		} else {
			var st struct {
				Connector struct{ State string }
				Tasks     []struct{ State, Trace string }
			}
			err := json.NewDecoder(resp.Body).Decode(&st)
			_ = resp.Body.Close()
			switch {
			case err != nil:
				last = fmt.Sprintf("status %d: %v", resp.StatusCode, err)
			case len(st.Tasks) > 0 && st.Tasks[0].State == "RUNNING":
				return nil
			case len(st.Tasks) > 0 && st.Tasks[0].State == "FAILED":
				return fmt.Errorf("checkpoint task failed: %s", st.Tasks[0].Trace)
			default:
				last = fmt.Sprintf("connector %s, %d tasks", st.Connector.State, len(st.Tasks))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("checkpoint task not RUNNING within %s (last: %s)", mm2ReadyTimeout, last)
		}
		time.Sleep(pollInterval)
	}
}
