package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateNeverPrintsSecrets: the effective config and every warning or
// problem are printed with secrets redacted, valid config or not.
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
