package config

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

func mustConfig(t *testing.T, props map[string]string) *Config {
	t.Helper()
	cfg, _, err := FromProperties(props, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustSarama(t *testing.T, cfg *Config, role Role) *sarama.Config {
	t.Helper()
	sc, err := cfg.SaramaConfig(role)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestClientPrecedence(t *testing.T) {
	cfg := mustConfig(t, with(
		"source.cluster.request.timeout.ms", "1000", // not a connection key: MM2 drops it
		"consumer.request.timeout.ms", "2000",
		"source.consumer.request.timeout.ms", "3000",
		"admin.request.timeout.ms", "4000",
		"target.cluster.client.rack", "ignored",
		"target.producer.client.rack", "r2",
	))
	for role, want := range map[Role]time.Duration{
		SourceConsumer: 3 * time.Second, // source.consumer.* over consumer.*
		TargetConsumer: 2 * time.Second, // consumer.* for both sides
		SourceAdmin:    4 * time.Second,
		SourceProducer: sarama.NewConfig().Net.ReadTimeout, // nothing for producers
	} {
		if got := mustSarama(t, cfg, role).Net.ReadTimeout; got != want {
			t.Errorf("%s: ReadTimeout %v, want %v", role, got, want)
		}
	}
	if got := mustSarama(t, cfg, TargetProducer).RackID; got != "r2" {
		t.Errorf("rack %q", got)
	}
	if got := mustSarama(t, cfg, TargetAdmin).RackID; got != "" {
		t.Errorf("target.cluster.client.rack reached the admin: %q", got)
	}
	if cfg.Source.Consumer["request.timeout.ms"] != "3000" || cfg.Source.Admin["request.timeout.ms"] != "4000" || cfg.Source.Consumer["bootstrap.servers"] != "a:9092" {
		t.Errorf("resolved source clients %+v", cfg.Source)
	}
}

func TestClientIDAndVersion(t *testing.T) {
	cfg := mustConfig(t, with("name", "cp", "source.admin.client.id", "ops"))
	if got := mustSarama(t, cfg, SourceConsumer).ClientID; got != "A->B|cp|source-consumer" {
		t.Errorf("client id %q", got)
	}
	if got := mustSarama(t, cfg, SourceAdmin).ClientID; got != "ops|A->B|cp|source-admin" {
		t.Errorf("client id %q", got)
	}
	if v := mustSarama(t, cfg, TargetAdmin).Version; v != sarama.V4_1_0_0 {
		t.Errorf("version %s", v)
	}
	older := mustConfig(t, with("checkpointd.kafka.version", "3.7.0"))
	if v := mustSarama(t, older, TargetAdmin).Version; v != sarama.V3_7_0_0 {
		t.Errorf("version %s", v)
	}
}

func TestClientKinds(t *testing.T) {
	cfg := mustConfig(t, with(
		"source.consumer.auto.offset.reset", "latest",
		"target.consumer.isolation.level", "read_committed",
		"consumer.fetch.min.bytes", "100",
		"consumer.fetch.max.wait.ms", "250",
		"consumer.max.partition.fetch.bytes", "2048",
		"consumer.session.timeout.ms", "30000",
		"consumer.heartbeat.interval.ms", "3000",
		"consumer.group.instance.id", "i-1",
		"target.producer.acks", "all",
		"target.producer.compression.type", "ZSTD",
		"target.producer.linger.ms", "5",
		"target.producer.batch.size", "16384",
		"target.producer.max.request.size", "1048576",
		"target.producer.enable.idempotence", "true",
		"target.admin.default.api.timeout.ms", "9000",
		"target.admin.retries", "7",
		"retry.backoff.ms", "1", // connector level: unknown, not a client setting
		"admin.retry.backoff.ms", "300",
		"admin.metadata.max.age.ms", "60000",
		"admin.socket.connection.setup.timeout.ms", "700",
	))
	src, tgt := mustSarama(t, cfg, SourceConsumer), mustSarama(t, cfg, TargetConsumer)
	if src.Consumer.Offsets.AutoCommit.Enable || src.Consumer.Offsets.Initial != sarama.OffsetNewest || tgt.Consumer.Offsets.Initial != sarama.OffsetOldest {
		t.Errorf("offsets: auto-commit %v, source initial %d, target initial %d", src.Consumer.Offsets.AutoCommit.Enable, src.Consumer.Offsets.Initial, tgt.Consumer.Offsets.Initial)
	}
	if src.Consumer.IsolationLevel != sarama.ReadUncommitted || tgt.Consumer.IsolationLevel != sarama.ReadCommitted {
		t.Error("isolation level")
	}
	if c := src.Consumer; c.Fetch.Min != 100 || c.MaxWaitTime != 250*time.Millisecond || c.Fetch.Default != 2048 ||
		c.Group.Session.Timeout != 30*time.Second || c.Group.Heartbeat.Interval != 3*time.Second || c.Group.InstanceId != "i-1" {
		t.Errorf("consumer %+v", c)
	}
	p := mustSarama(t, cfg, TargetProducer)
	if p.Producer.RequiredAcks != sarama.WaitForAll || p.Producer.Compression != sarama.CompressionZSTD ||
		p.Producer.Flush.Frequency != 5*time.Millisecond || p.Producer.Flush.Bytes != 16384 ||
		p.Producer.MaxMessageBytes != 1048576 || !p.Producer.Idempotent || p.Net.MaxOpenRequests != 1 {
		t.Errorf("producer %+v net %+v", p.Producer, p.Net)
	}
	a := mustSarama(t, cfg, TargetAdmin)
	if a.Admin.Timeout != 9*time.Second || a.Admin.Retry.Max != 7 || a.Admin.Retry.Backoff != 300*time.Millisecond ||
		a.Metadata.RefreshFrequency != time.Minute || a.Net.DialTimeout != 700*time.Millisecond || a.Metadata.AllowAutoTopicCreation {
		t.Errorf("admin %+v", a.Admin)
	}
	idem := mustConfig(t, with("producer.enable.idempotence", "true"))
	if mustSarama(t, idem, TargetProducer).Producer.RequiredAcks != sarama.WaitForAll {
		t.Error("idempotence without acks needs acks=all, as in Java")
	}
}

func TestSASL(t *testing.T) {
	jaas := func(module, opts string) string {
		return "org.apache.kafka.common.security." + module + " required " + opts + ";"
	}
	tests := []struct {
		name      string
		mechanism string
		jaas      string
		user, pw  string
		want      string // in the error, or "" for success
	}{
		{"plain", "PLAIN", jaas("plain.PlainLoginModule", `username="alice" password="s3cr=t;x"`), "alice", "s3cr=t;x", ""},
		{"mechanism in lower case", "plain", jaas("plain.PlainLoginModule", `username="alice" password="p"`), "alice", "p", ""},
		{"scram 256", "SCRAM-SHA-256", jaas("scram.ScramLoginModule", `username="bob" password="p"`), "bob", "p", ""},
		{"scram 512", "SCRAM-SHA-512", jaas("scram.ScramLoginModule", "username=bob\npassword='p w'"), "bob", "p w", ""},
		{"either module for either mechanism", "PLAIN", jaas("scram.ScramLoginModule", `username="bob" password="p"`), "bob", "p", ""},
		{"escapes in quotes", "PLAIN", jaas("plain.PlainLoginModule", `username="a\"b" password="c\\d\101"`), `a"b`, `c\dA`, ""},
		{"no jaas", "PLAIN", "", "", "", "sasl.jaas.config: required"},
		{"no password", "PLAIN", jaas("plain.PlainLoginModule", `username="a"`), "", "", "password"},
		{"no semicolon", "PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b"`, "", "", "semicolon"},
		{"bad flag", "PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule always username="a" password="b";`, "", "", "control flag"},
		{"two modules", "PLAIN", jaas("plain.PlainLoginModule", `username="a" password="b"`) + jaas("plain.PlainLoginModule", `username="a" password="b"`), "", "", "exactly 1"},
		{"oauth module", "PLAIN", jaas("oauthbearer.OAuthBearerLoginModule", ""), "", "", "OAUTHBEARER"},
		{"kerberos module", "PLAIN", `com.sun.security.auth.module.Krb5LoginModule required;`, "", "", "Krb5LoginModule is for sasl.mechanism=GSSAPI"},
		{"delegation token", "SCRAM-SHA-256", jaas("scram.ScramLoginModule", `username="a" password="b" tokenauth="true"`), "", "", "delegation tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := with("source.cluster.security.protocol", "sasl_plaintext", "source.cluster.sasl.mechanism", tt.mechanism)
			if tt.jaas != "" {
				props["source.cluster.sasl.jaas.config"] = tt.jaas
			}
			cfg, rep, err := FromProperties(props, nil, nil)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				if strings.Contains(err.Error(), `username="a"`) {
					t.Errorf("the JAAS config was printed: %v", err)
				}
				if len(rep.Problems) != 1 {
					t.Errorf("want one problem although four source clients share the setting: %v", rep.Problems)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := mustSarama(t, cfg, SourceAdmin)
			if !sc.Net.SASL.Enable || !sc.Net.SASL.Handshake || sc.Net.SASL.User != tt.user || sc.Net.SASL.Password != tt.pw || sc.Net.TLS.Enable {
				t.Errorf("SASL %+v", sc.Net.SASL)
			}
			if strings.HasPrefix(strings.ToUpper(tt.mechanism), "SCRAM") != (sc.Net.SASL.SCRAMClientGeneratorFunc != nil) {
				t.Error("SCRAM client generator")
			}
		})
	}
}

// TestSCRAMConversation runs the client sarama gets against a SCRAM server, the way
// sarama drives it (Begin, Step(""), then Step per server message until Done).
func TestSCRAMConversation(t *testing.T) {
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			hash := scram.SHA256
			if mech == "SCRAM-SHA-512" {
				hash = scram.SHA512
			}
			for _, tt := range []struct {
				name, serverPassword string
				iterations           int
				ok                   bool
			}{
				{"right password", "pä=ss,w", 4096, true},
				{"wrong password", "other", 4096, false},
				{"too few iterations", "pä=ss,w", 1000, false},
			} {
				t.Run(tt.name, func(t *testing.T) {
					cfg := mustConfig(t, with("target.cluster.security.protocol", "SASL_SSL", "target.cluster.sasl.mechanism", mech,
						"target.cluster.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required username="u=1,x" password="pä=ss,w";`))
					sc := mustSarama(t, cfg, TargetConsumer)
					if !sc.Net.TLS.Enable || sc.Net.TLS.Config == nil {
						t.Fatal("SASL_SSL without TLS")
					}
					server := scramServer(t, hash, sc.Net.SASL.User, tt.serverPassword, tt.iterations)
					client := sc.Net.SASL.SCRAMClientGeneratorFunc()
					if err := client.Begin(sc.Net.SASL.User, sc.Net.SASL.Password, ""); err != nil {
						t.Fatal(err)
					}
					msg, err := client.Step("")
					for err == nil && !client.Done() {
						var reply string
						if reply, err = server.Step(msg); err != nil {
							break
						}
						msg, err = client.Step(reply)
					}
					if ok := err == nil && client.Done() && server.Valid(); ok != tt.ok {
						t.Errorf("authenticated %v (err %v), want %v", ok, err, tt.ok)
					}
				})
			}
		})
	}
}

func scramServer(t *testing.T, hash scram.HashGeneratorFcn, user, password string, iterations int) *scram.ServerConversation {
	t.Helper()
	client, err := hash.NewClientUnprepped(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	creds := client.GetStoredCredentials(scram.KeyFactors{Salt: "0123456789abcdef", Iters: iterations})
	server, err := hash.NewServer(func(name string) (scram.StoredCredentials, error) {
		if name != user {
			t.Errorf("server saw user %q, want %q", name, user)
		}
		return creds, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return server.NewConversation()
}

// TestSourceFetchDefaults: the source consumer waits briefly to gather
// commits unless the properties say otherwise; other roles keep sarama's.
func TestSourceFetchDefaults(t *testing.T) {
	def := sarama.NewConfig().Consumer
	for _, tc := range []struct {
		name    string
		props   map[string]string
		role    Role
		minimum int32
		wait    time.Duration
	}{
		{"source default", with(), SourceConsumer, SourceFetchMinBytes, SourceFetchMaxWait},
		{"target untouched", with(), TargetConsumer, def.Fetch.Min, def.MaxWaitTime},
		{"overridden", with("source.consumer.fetch.min.bytes", "1", "consumer.fetch.max.wait.ms", "500"), SourceConsumer, 1, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := mustSarama(t, mustConfig(t, tc.props), tc.role)
			if sc.Consumer.Fetch.Min != tc.minimum || sc.Consumer.MaxWaitTime != tc.wait {
				t.Errorf("fetch min %d wait %v, want %d and %v", sc.Consumer.Fetch.Min, sc.Consumer.MaxWaitTime, tc.minimum, tc.wait)
			}
		})
	}
}
