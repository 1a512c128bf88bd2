package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
)

// TestValidateNeverPrintsSecrets: the effective config and every warning or
// problem are printed with secrets redacted, valid config or not, and so are
// the values of unknown and misspelled keys whose names look secret.
func TestValidateNeverPrintsSecrets(t *testing.T) {
	const secret = "s3cr3t-Value"
	cases := map[string]string{
		"valid": `source.cluster.alias: "a"
target.cluster.alias: "b"
source.cluster.bootstrap.servers: "a:9092"
target.cluster.bootstrap.servers: "b:9092"
source.cluster.security.protocol: "SASL_PLAINTEXT"
source.cluster.sasl.mechanism: "PLAIN"
source.cluster.sasl.jaas.config: 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";'
target.admin.ssl.key.password: "` + secret + `"
source.consumer.some.token: "` + secret + `"
source.cluster.sasl.jaas.confg: 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";'
source.admin.basic.auth.user.info: "u:` + secret + `"
target.producer.ssl.keystore.pasword: "` + secret + `"
`,
		"invalid": `source.cluster.alias: "a"
source.cluster.bootstrap.servers: "a:9092"
target.cluster.bootstrap.servers: "b:9092"
source.cluster.security.protocol: "SASL_PLAINTEXT"
source.cluster.sasl.mechanism: "NOPE"
source.cluster.sasl.jaas.config: 'x required username="u" password="` + secret + `";'
target.cluster.ssl.truststore.password: "` + secret + `"
tasks.max: "zero"
`,
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			err := dispatch(context.Background(), []string{"validate", "--config", path}, &stdout, &stderr)
			all := stdout.String() + stderr.String()
			if err != nil {
				all += err.Error()
			}
			if (err == nil) != (name == "valid") {
				t.Fatalf("validate error = %v", err)
			}
			if !strings.Contains(stdout.String(), "sasl.jaas.config") {
				t.Fatalf("effective config not printed:\n%s", stdout.String())
			}
			if strings.Contains(all, secret) {
				t.Fatalf("a secret was printed:\n%s", all)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer that the service's loggers may write while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunNeverLogsSecrets runs the service at debug level on the real
// clusters with secrets in every kind of place (SSL passwords, a JAAS
// password, a client token, an OTLP exporter header), in both log formats,
// until it has opened its gate; then it starts it with SASL against a
// listener that does not speak SASL, so it fails. No log line and no error
// may hold a secret.
func TestRunNeverLogsSecrets(t *testing.T) {
	bed := kafkatest.Shared(t)
	const secret = "s3cr3t-Run-Value"
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // nothing listens: exports fail and say so
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer "+secret)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	base := fmt.Sprintf(`source.cluster.alias: %q
target.cluster.alias: %q
source.cluster.bootstrap.servers: %q
target.cluster.bootstrap.servers: %q
checkpoints.topic.replication.factor: "1"
sync.group.offsets.enabled: "true"
checkpointd.group.id: %q
checkpointd.metrics.address: "127.0.0.1:0"
checkpointd.log.level: "debug"
`, bed.Source.Alias, bed.Target.Alias, bed.Source.Bootstrap, bed.Target.Bootstrap, kafkatest.UniqueName(t, "checkpointd"))
	secrets := `target.admin.ssl.key.password: "` + secret + `"
source.cluster.ssl.truststore.password: "` + secret + `"
source.consumer.some.token: "` + secret + `"
`
	bed.Source.EnsureTopic(t, bed.OffsetSyncsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	bed.Target.EnsureTopic(t, bed.CheckpointsTopic(), 1, map[string]string{"cleanup.policy": "compact"})
	// run runs the service until its log holds until (then stops it) or it
	// returns by itself; it reports the output and whether until was seen.
	run := func(t *testing.T, cfg string, until string) (out string, seen bool, err error) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var stdout, stderr syncBuffer
		done := make(chan error, 1)
		go func() { done <- dispatch(ctx, []string{"run", "--config", path}, &stdout, &stderr) }()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case err := <-done:
				return stdout.String() + stderr.String(), seen, err
			case <-tick.C:
			}
			if until != "" && !seen && strings.Contains(stderr.String(), until) {
				seen = true
				time.Sleep(500 * time.Millisecond) // a few failed exports more
				cancel()
			}
		}
	}
	for _, format := range []string{"text", "json"} {
		t.Run("running/"+format, func(t *testing.T) {
			out, seen, err := run(t, base+secrets+"checkpointd.log.format: \""+format+"\"\n", "translation gate opened")
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			if !seen {
				t.Fatalf("the service never opened its gate:\n%s", out)
			}
			if !strings.Contains(out, "DEBUG") || !strings.Contains(out, "tracing on") {
				t.Fatalf("no debug lines or no tracing: the run did not log what it was meant to:\n%s", out)
			}
			if strings.Contains(out, secret) {
				t.Fatalf("a secret was logged:\n%s", out)
			}
		})
	}
	t.Run("failing", func(t *testing.T) {
		cfg := base + secrets + `source.cluster.security.protocol: "SASL_PLAINTEXT"
source.cluster.sasl.mechanism: "PLAIN"
source.cluster.sasl.jaas.config: 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";'
admin.timeout.ms: "5000"
`
		out, _, err := run(t, cfg, "")
		if err == nil {
			t.Fatalf("run with SASL against a plaintext listener succeeded:\n%s", out)
		}
		// The error must say which cluster, which broker, and what to check.
		for _, want := range []string{`cluster "source"`, "broker " + bed.Source.Bootstrap, "SASL mechanism: the listener does not accept SASL PLAIN", "security.protocol"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if strings.Contains(out+err.Error(), secret) {
			t.Fatalf("a secret was logged or returned:\nerror: %v\n%s", err, out)
		}
		t.Logf("failed as it should: %v", err)
	})
}
