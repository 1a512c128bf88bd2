package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/metrics"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
	"github.com/checkpointd/checkpointd/pipeline"
)

// readyBenchEnv turns TestReadyTime on. Without it the test skips, so plain
// `go test ./...` never runs it; with it and no Kafka it fails.
const readyBenchEnv = "CHECKPOINTD_READY_BENCH"

// The start-up load: readySyncs MM2 offset syncs over readyTopics x
// readyPartitions source partitions in the offset-syncs topic, and
// readyCheckpoints checkpoints (readyGroups groups) in the checkpoints topic.
const (
	readyTopics      = 100
	readyPartitions  = 100 // per topic: 10,000 partitions
	readySyncs       = 1_000_000
	readyGroups      = 100
	readyCheckpoints = 100_000
	readyBound       = 120 * time.Second // a start that takes longer fails
)

// TestReadyTime measures how long a checkpointd instance takes from start
// (pipeline.New) to an open translation gate and a nil Ready, when the
// offset-syncs topic holds 1M syncs over 10k partitions and the checkpoints
// topic 100k checkpoints: both are read whole before translation starts. The
// instance runs with metrics, as the binary does when /readyz is served.
// Every run starts a fresh instance on the same topics
// ($CHECKPOINTD_READY_RUNS, default 3). A CPU profile of each start is
// written where $CHECKPOINTD_READY_CPUPROFILE says (run i gets suffix .i).
// Results are appended to bin/bench-ready.txt.
//
//	CHECKPOINTD_READY_BENCH=1 go test -count=1 -timeout 20m -run '^TestReadyTime$' -v ./pipeline/
func TestReadyTime(t *testing.T) {
	if os.Getenv(readyBenchEnv) == "" {
		t.Skipf("time-to-ready benchmark on real Kafka (a few minutes): set %s=1 to run it", readyBenchEnv)
	}
	if testing.Short() {
		t.Fatalf("%s is set but -short skips real Kafka: drop -short", readyBenchEnv)
	}
	runs := 3
	if v := os.Getenv("CHECKPOINTD_READY_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CHECKPOINTD_READY_RUNS=%q: want a positive number", v)
		}
		runs = n
	}
	bed := kafkatest.Shared(t)

	// Aliases of their own, so the two internal topics are this test's alone.
	srcAlias := kafkatest.UniqueName(t, "rsrc")
	tgtAlias := kafkatest.UniqueName(t, "rtgt")
	syncsTopic := "mm2-offset-syncs." + tgtAlias + ".internal"
	checkpointsTopic := srcAlias + ".checkpoints.internal"
	compact := map[string]string{"cleanup.policy": "compact"}
	bed.Source.CreateTopic(t, syncsTopic, 1, compact)
	bed.Target.CreateTopic(t, checkpointsTopic, 1, compact)

	began := time.Now()
	produceAll(t, bed.Source, syncsTopic, readySyncs, func(i int) (key, value []byte) {
		s := readySync(i)
		return s.Key(), s.Value()
	})
	t.Logf("produced %d offset syncs in %s", readySyncs, time.Since(began).Round(time.Millisecond))
	began = time.Now()
	produceAll(t, bed.Target, checkpointsTopic, readyCheckpoints, func(i int) (key, value []byte) {
		cp := readyCheckpoint(srcAlias, i)
		return cp.Key(), cp.Value()
	})
	t.Logf("produced %d checkpoints in %s", readyCheckpoints, time.Since(began).Round(time.Millisecond))
	if got := bed.Source.EndOffsets(t, syncsTopic)[0]; got != readySyncs {
		t.Fatalf("offset-syncs topic ends at %d, want %d", got, readySyncs)
	}
	if got := bed.Target.EndOffsets(t, checkpointsTopic)[0]; got != readyCheckpoints {
		t.Fatalf("checkpoints topic ends at %d, want %d", got, readyCheckpoints)
	}

	// A cluster in use has __consumer_offsets; a fresh test bed makes it on
	// the first group request, which pipeline.New would wait for.
	bed.Source.CommitOffsets(t, kafkatest.UniqueName(t, "warm-up"), map[messages.TopicPartition]int64{{Topic: syncsTopic, Partition: 0}: 0})

	f := &fixture{bed: bed, running: make(map[*instance]struct{})}
	props := [][2]string{
		{"source.cluster.alias", srcAlias},
		{"target.cluster.alias", tgtAlias},
		{"source.cluster.bootstrap.servers", bed.Source.Bootstrap},
		{"target.cluster.bootstrap.servers", bed.Target.Bootstrap},
		{"groups", "ready-bench-no-such-group"},
		{"sync.group.offsets.enabled", "true"},
		{"checkpointd.group.id", kafkatest.UniqueName(t, "checkpointd")},
	}
	cfg := loadConfig(t, writeConfig(t, "checkpointd.yaml", props))

	out := kafkatest.BenchOut(t, "bench-ready.txt")
	fmt.Fprintf(out, "\n# %s  time to ready; Kafka %s, %s, %d CPUs; %d offset syncs over %d partitions, %d checkpoints\n",
		time.Now().UTC().Format(time.RFC3339), kafkatest.KafkaVersion, runtime.Version(), runtime.NumCPU(),
		readySyncs, readyTopics*readyPartitions, readyCheckpoints)
	fmt.Fprintf(out, "# %-4s %10s %10s %10s %12s %10s\n", "run", "new", "gate", "ready", "records/s", "cpu")

	var gates []time.Duration
	for run := range runs {
		r := readyRun(t, f, cfg, run)
		gates = append(gates, r.gate)
		rate := float64(readySyncs+readyCheckpoints) / r.gate.Seconds()
		t.Logf("run %d: pipeline.New %s, gate open %s, ready %s after start; %.0f records/s; CPU %s",
			run, r.newTook.Round(time.Millisecond), r.gate.Round(time.Millisecond), r.ready.Round(time.Millisecond), rate, r.cpu.Round(time.Millisecond))
		fmt.Fprintf(out, "  %-4d %10s %10s %10s %12.0f %10s\n", run, r.newTook.Round(time.Millisecond),
			r.gate.Round(time.Millisecond), r.ready.Round(time.Millisecond), rate, r.cpu.Round(time.Millisecond))
	}
	slices.Sort(gates)
	t.Logf("time to gate: min %s, median %s, max %s", gates[0].Round(time.Millisecond),
		gates[len(gates)/2].Round(time.Millisecond), gates[len(gates)-1].Round(time.Millisecond))
	_ = out.Sync()
}

type readyResult struct {
	newTook, gate, ready, cpu time.Duration
}

// readyRun starts one instance, waits for its gate and Ready, checks what it
// indexed and stops it.
func readyRun(t *testing.T, f *fixture, cfg *config.Config, run int) readyResult {
	t.Helper()
	level := slog.LevelWarn
	if v := os.Getenv("CHECKPOINTD_TEST_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	w := &testLogWriter{t: t}
	defer func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	}()
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("run", run)

	if path := os.Getenv("CHECKPOINTD_READY_CPUPROFILE"); path != "" {
		pf, err := os.Create(path + "." + strconv.Itoa(run))
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	cpuBefore := processCPU()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	m := metrics.New(metrics.Config{Source: cfg.SourceAlias, Target: cfg.TargetAlias})
	p, err := pipeline.New(ctx, cfg, pipeline.WithLogger(logger), pipeline.WithMetrics(m))
	if err != nil {
		t.Fatalf("pipeline.New: %v", err)
	}
	var r readyResult
	r.newTook = time.Since(start)
	runCtx, stop := context.WithCancel(context.Background())
	in := &instance{name: "ready-" + strconv.Itoa(run), p: p, cancel: stop, done: make(chan error, 1)}
	go func() { in.done <- p.Run(runCtx) }()
	f.mu.Lock()
	f.running[in] = struct{}{}
	f.mu.Unlock()
	defer f.stop(t, in)

	for !p.Checkpointer().GateOpen() {
		if time.Since(start) > readyBound {
			t.Fatalf("gate still closed %s after start; index holds %d partitions", readyBound, p.Checkpointer().Index().Partitions())
		}
		f.checkRunning(t)
		time.Sleep(2 * time.Millisecond)
	}
	r.gate = time.Since(start)
	for {
		err := p.Ready(ctx)
		if err == nil {
			break
		}
		if time.Since(start) > readyBound {
			t.Fatalf("not ready %s after start: %v", readyBound, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	r.ready = time.Since(start)
	r.cpu = processCPU() - cpuBefore

	stats := p.Checkpointer().Index().Stats()
	if want := readyTopics * readyPartitions; stats.Partitions != want {
		t.Errorf("index holds %d partitions, want %d", stats.Partitions, want)
	}
	return r
}

// readySync is the i-th offset sync: round robin over the partitions, each
// partition's upstream offsets rising by 10 and downstream by 7.
func readySync(i int) messages.OffsetSync {
	n := readyTopics * readyPartitions
	tp := i % n
	round := int64(i / n)
	return messages.OffsetSync{
		TopicPartition:   messages.TopicPartition{Topic: "ready-topic-" + strconv.Itoa(tp/readyPartitions), Partition: int32(tp % readyPartitions)},
		UpstreamOffset:   round * 10,
		DownstreamOffset: round * 7,
	}
}

// readyCheckpoint is the i-th checkpoint: readyGroups groups over the first
// readyCheckpoints/readyGroups partitions of the downstream topics.
func readyCheckpoint(srcAlias string, i int) messages.Checkpoint {
	g := i % readyGroups
	tp := i / readyGroups
	return messages.Checkpoint{
		Group:            "ready-group-" + strconv.Itoa(g),
		TopicPartition:   messages.TopicPartition{Topic: srcAlias + ".ready-topic-" + strconv.Itoa(tp/readyPartitions), Partition: int32(tp % readyPartitions)},
		UpstreamOffset:   1000,
		DownstreamOffset: 700,
		Metadata:         "",
	}
}

// produceAll writes n records to partition 0 of topic through one async
// producer in large batches and fails the test on any error.
func produceAll(t *testing.T, c *kafkatest.Cluster, topic string, n int, rec func(i int) (key, value []byte)) {
	t.Helper()
	cfg := c.SaramaConfig()
	cfg.Producer.Return.Successes = false
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForLocal
	cfg.Producer.Compression = sarama.CompressionLZ4
	cfg.Producer.Flush.Bytes = 512 << 10
	cfg.Producer.Flush.Frequency = 20 * time.Millisecond
	cfg.Producer.MaxMessageBytes = 1 << 20
	cfg.Net.MaxOpenRequests = 5
	cfg.ChannelBufferSize = 8192
	producer, err := sarama.NewAsyncProducer([]string{c.Bootstrap}, cfg)
	if err != nil {
		t.Fatalf("producer on %s: %v", c.Alias, err)
	}
	errs := make(chan error, 1)
	go func() {
		var first error
		for e := range producer.Errors() {
			if first == nil {
				first = e
			}
		}
		errs <- first
	}()
	for i := range n {
		key, value := rec(i)
		producer.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.ByteEncoder(key), Value: sarama.ByteEncoder(value)}
	}
	producer.AsyncClose()
	if err := <-errs; err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, c.Alias, err)
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
