package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/checkpointd/checkpointd/infra/config"
	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

const (
	plainModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

func jaas(module string, c kafkatest.Credentials) string {
	return fmt.Sprintf(`%s required username="%s" password="%s";`, module, c.User, c.Password)
}

// dialWith builds the source admin client of a checkpointd configuration and
// has it open a connection to addr and fetch metadata: TLS, SASL and a request
// on the authenticated session. It returns sarama's own error, and the client
// configuration.
func dialWith(t *testing.T, addr string, props map[string]string, env []string) (error, *sarama.Config) {
	t.Helper()
	all := map[string]string{
		"source.cluster.alias": "secure-a", "target.cluster.alias": "secure-b",
		"source.cluster.bootstrap.servers": addr, "target.cluster.bootstrap.servers": addr,
	}
	for k, v := range props {
		all["source.cluster."+k] = v
	}
	cfg, rep, err := config.FromProperties(all, nil, env)
	if err != nil {
		t.Fatalf("configuration refused: %v", err)
	}
	for _, w := range rep.Warnings {
		t.Logf("warning: %v", w)
	}
	sc, err := cfg.SaramaConfig(config.SourceAdmin)
	if err != nil {
		t.Fatal(err)
	}
	sc.Net.DialTimeout, sc.Net.ReadTimeout = 5*time.Second, 10*time.Second
	b := sarama.NewBroker(addr)
	if err := b.Open(sc); err != nil {
		return err, sc
	}
	defer func() { _ = b.Close() }()
	if _, err := b.Connected(); err != nil {
		return err, sc
	}
	_, err = b.GetMetadata(&sarama.MetadataRequest{Version: 4})
	return err, sc
}

// TestSecuredClusterConnections: checkpointd's client settings, as an MM2 config
// carries them, connect to a real broker's SASL_SSL listener with PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512 and to its mTLS listener with JKS and PKCS12
// stores made by keytool; and every failure is reported at its own layer.
func TestSecuredClusterConnections(t *testing.T) {
	t.Parallel()
	s := kafkatest.SharedSecure(t)
	var jksStores, p12Stores kafkatest.Stores
	var wg sync.WaitGroup // keytool starts a JVM per step: make both kinds at once
	wg.Go(func() { jksStores = s.ClientStores(t, "JKS") })
	wg.Go(func() { p12Stores = s.ClientStores(t, "PKCS12") })
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	otherCA := writeOtherCA(t)
	plain, s256, s512 := s.Users["PLAIN"], s.Users["SCRAM-SHA-256"], s.Users["SCRAM-SHA-512"]
	saslSSL := func(mech, jaasConfig string, trust ...string) map[string]string {
		p := map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": mech, "sasl.jaas.config": jaasConfig}
		for i := 0; i+1 < len(trust); i += 2 {
			p[trust[i]] = trust[i+1]
		}
		return p
	}
	mtls := func(st kafkatest.Stores, extra ...string) map[string]string {
		p := map[string]string{
			"security.protocol": "SSL", "ssl.keystore.type": st.Type, "ssl.keystore.location": st.Keystore,
			"ssl.keystore.password": st.StorePassword, "ssl.truststore.type": st.Type,
			"ssl.truststore.location": st.Truststore, "ssl.truststore.password": st.StorePassword,
		}
		if st.KeyPassword != st.StorePassword {
			p["ssl.key.password"] = st.KeyPassword
		}
		for i := 0; i+1 < len(extra); i += 2 {
			p[extra[i]] = extra[i+1]
		}
		return p
	}
	pemTrust := []string{"ssl.truststore.type", "PEM", "ssl.truststore.location", s.CAFile}
	oauth := func(c kafkatest.OAuthClient) map[string]string { return oauthProps(s, c) }
	wrongSecret := s.OAuthClients["long"]
	wrongSecret.Secret = "wrong"
	cases := []struct {
		name  string
		addr  string
		props map[string]string
		layer kafkaerr.Layer // Unknown: connects
	}{
		{"SASL_SSL PLAIN, PEM truststore", s.SASLSSL, saslSSL("PLAIN", jaas(plainModule, plain), pemTrust...), kafkaerr.Unknown},
		{"SASL_SSL SCRAM-SHA-256, JKS truststore", s.SASLSSL, saslSSL("SCRAM-SHA-256", jaas(scramModule, s256),
			"ssl.truststore.location", jksStores.Truststore, "ssl.truststore.password", jksStores.StorePassword), kafkaerr.Unknown},
		{"SASL_SSL SCRAM-SHA-512, PKCS12 truststore", s.SASLSSL, saslSSL("SCRAM-SHA-512", jaas(scramModule, s512),
			"ssl.truststore.type", "PKCS12", "ssl.truststore.location", p12Stores.Truststore, "ssl.truststore.password", p12Stores.StorePassword), kafkaerr.Unknown},
		{"SASL_SSL SCRAM-SHA-512 by host name localhost", strings.Replace(s.SASLSSL, "127.0.0.1", "localhost", 1), saslSSL("SCRAM-SHA-512", jaas(scramModule, s512), pemTrust...), kafkaerr.Unknown},
		{"mTLS, JKS stores with a key password", s.MTLS, mtls(jksStores), kafkaerr.Unknown},
		{"mTLS, PKCS12 stores", s.MTLS, mtls(p12Stores), kafkaerr.Unknown},
		{"mTLS, host name check off", s.MTLS, mtls(p12Stores, "ssl.endpoint.identification.algorithm", ""), kafkaerr.Unknown},

		{"SASL_SSL OAUTHBEARER, client credentials, JWT checked against the JWKS", s.OAuth, oauth(s.OAuthClients["long"]), kafkaerr.Unknown},
		{"OAUTHBEARER, client secret refused by the token endpoint", s.OAuth, oauth(wrongSecret), kafkaerr.Credentials},
		{"OAUTHBEARER, a JWT the broker cannot verify", s.OAuth, oauth(s.OAuthClients["forged"]), kafkaerr.Credentials},
		{"SCRAM on the OAUTHBEARER-only listener", s.OAuth, saslSSL("SCRAM-SHA-512", jaas(scramModule, s512), pemTrust...), kafkaerr.SASLMechanism},

		{"untrusted broker under SASL_SSL is TLS's", s.SASLSSL, saslSSL("SCRAM-SHA-512", jaas(scramModule, s512), "ssl.truststore.type", "PEM", "ssl.truststore.location", otherCA), kafkaerr.TLS},
		{"untrusted broker, host name check off, is still TLS's", s.SASLSSL, saslSSL("PLAIN", jaas(plainModule, plain), "ssl.truststore.location", otherCA, "ssl.endpoint.identification.algorithm", ""), kafkaerr.TLS},
		{"wrong SCRAM password", s.SASLSSL, saslSSL("SCRAM-SHA-256", jaas(scramModule, kafkatest.Credentials{User: s256.User, Password: "wrong"}), pemTrust...), kafkaerr.Credentials},
		{"user without credentials for the mechanism", s.SASLSSL, saslSSL("SCRAM-SHA-512", jaas(scramModule, s256), pemTrust...), kafkaerr.Credentials},
		{"wrong PLAIN password", s.SASLSSL, saslSSL("PLAIN", jaas(plainModule, kafkatest.Credentials{User: plain.User, Password: "wrong"}), pemTrust...), kafkaerr.Credentials},
		{"SASL on a listener without SASL", s.Bootstrap, map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas(plainModule, plain)}, kafkaerr.SASLMechanism},
		{"mTLS without a client certificate", s.MTLS, map[string]string{"security.protocol": "SSL", "ssl.truststore.location": s.CAFile}, kafkaerr.TLS},
		// The broker reads the ClientHello as a request and hangs up: all a client sees is EOF.
		{"TLS to a plaintext listener", s.Bootstrap, map[string]string{"security.protocol": "SSL", "ssl.truststore.location": s.CAFile}, kafkaerr.Network},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err, sc := dialWith(t, tc.addr, tc.props, nil)
			switch {
			case tc.layer == kafkaerr.Unknown && err != nil:
				t.Fatalf("did not connect: %s", kafkaerr.Describe(err, sc))
			case tc.layer == kafkaerr.Unknown:
			case err == nil:
				t.Fatalf("connected; want a %s failure", tc.layer)
			case kafkaerr.LayerOf(err) != tc.layer:
				t.Fatalf("%v: layer %s, want %s", err, kafkaerr.LayerOf(err), tc.layer)
			case tc.layer == kafkaerr.Network && !strings.Contains(kafkaerr.Hint(err, sc), "security.protocol (SSL)"):
				t.Fatalf("hint %q does not name the security protocol", kafkaerr.Hint(err, sc))
			default:
				t.Logf("%s", kafkaerr.Describe(err, sc))
			}
		})
	}
	t.Run("ACL denies a topic", func(t *testing.T) {
		topic := kafkatest.UniqueName(t, "denied")
		s.CreateTopic(t, topic, 1, nil)
		admin := restrictedAdmin(t, s)
		waitForLayer(t, kafkaerr.Authorization, func() error {
			meta, err := admin.DescribeTopics([]string{topic})
			if err != nil || len(meta) == 0 {
				return err
			}
			if meta[0].Err == sarama.ErrNoError {
				return nil
			}
			return fmt.Errorf("describe topic %q: %w", topic, meta[0].Err)
		})
	})
}

// restrictedConfig is a checkpointd configuration whose clients on both sides (the
// same secured cluster) connect as user, a principal that is not a super user.
func restrictedConfig(s *kafkatest.SecureCluster, user kafkatest.Credentials) map[string]string {
	props := map[string]string{
		"source.cluster.alias": "secure-a", "target.cluster.alias": "secure-b",
		"source.cluster.bootstrap.servers": s.SASLSSL, "target.cluster.bootstrap.servers": s.SASLSSL,
	}
	for _, side := range []string{"source", "target"} {
		props[side+".cluster.security.protocol"] = "SASL_SSL"
		props[side+".cluster.sasl.mechanism"] = "SCRAM-SHA-512"
		props[side+".cluster.sasl.jaas.config"] = jaas(scramModule, user)
		props[side+".cluster.ssl.truststore.location"] = s.CAFile
	}
	return props
}

func restrictedAdmin(t *testing.T, s *kafkatest.SecureCluster) sarama.ClusterAdmin {
	t.Helper()
	cfg, _, err := config.FromProperties(restrictedConfig(s, s.Restricted), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cfg.SaramaConfig(config.SourceAdmin)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sarama.NewClusterAdmin([]string{s.SASLSSL}, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	return admin
}

// oauthProps are a client's OAUTHBEARER settings for the secured cluster's OAuth
// server, as a Kafka client has them.
func oauthProps(s *kafkatest.SecureCluster, c kafkatest.OAuthClient) map[string]string {
	return map[string]string{
		"security.protocol":                   "SASL_SSL",
		"ssl.truststore.location":             s.CAFile,
		"sasl.mechanism":                      "OAUTHBEARER",
		"sasl.login.callback.handler.class":   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
		"sasl.oauthbearer.token.endpoint.url": s.OAuthServer.TokenURL,
		"sasl.jaas.config": fmt.Sprintf(`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="%s" clientSecret="%s" scope="kafka";`,
			c.ID, c.Secret),
	}
}

// TestOAuthTokenRefreshOnKafka: with tokens that last 3 s, a client's second
// connection, 3.5 s after its first, authenticates with a fresh token (the first
// has expired, and the broker refuses expired tokens).
func TestOAuthTokenRefreshOnKafka(t *testing.T) {
	t.Parallel()
	s := kafkatest.SharedSecure(t)
	c := s.OAuthClients["short"]
	props := map[string]string{
		"source.cluster.alias": "secure-a", "target.cluster.alias": "secure-b",
		"source.cluster.bootstrap.servers": s.OAuth, "target.cluster.bootstrap.servers": s.OAuth,
	}
	for k, v := range oauthProps(s, c) {
		props["source.cluster."+k] = v
	}
	cfg, _, err := config.FromProperties(props, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cfg.SaramaConfig(config.SourceAdmin)
	if err != nil {
		t.Fatal(err)
	}
	connect := func() error {
		b := sarama.NewBroker(s.OAuth)
		if err := b.Open(sc); err != nil {
			return err
		}
		defer func() { _ = b.Close() }()
		if _, err := b.Connected(); err != nil {
			return err
		}
		_, err := b.GetMetadata(&sarama.MetadataRequest{Version: 4})
		return err
	}
	before, start := s.OAuthServer.Issued(c.ID), time.Now()
	if err := connect(); err != nil {
		t.Fatalf("first connection: %s", kafkaerr.Describe(err, sc))
	}
	if err := connect(); err != nil {
		t.Fatalf("second connection: %s", kafkaerr.Describe(err, sc))
	}
	// Within 2.4 s (0.8 of the token's 3 s) the token is reused; a slower machine
	// may legitimately have refreshed it already.
	if n := s.OAuthServer.Issued(c.ID) - before; n != 1 && time.Since(start) < 2*time.Second {
		t.Fatalf("%d tokens for two connections at once, want one reused", n)
	}
	before = s.OAuthServer.Issued(c.ID)
	time.Sleep(3500 * time.Millisecond)
	if err := connect(); err != nil {
		t.Fatalf("connection after the first token expired: %s", kafkaerr.Describe(err, sc))
	}
	if n := s.OAuthServer.Issued(c.ID) - before; n != 1 {
		t.Fatalf("%d tokens issued for a connection after the last one expired, want a fresh one", n)
	}
}

// waitForLayer retries f until it fails at layer (an ACL takes a moment to
// reach the authorizer).
func waitForLayer(t *testing.T, layer kafkaerr.Layer, f func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := f()
		if kafkaerr.LayerOf(err) == layer {
			t.Logf("%s", kafkaerr.Describe(err, nil))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want a %s error, got %v", layer, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeOtherCA writes a CA certificate the broker's certificate is not signed by.
func writeOtherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunOnSecuredClusterWithProviderSecrets runs the service, at debug level, on
// SASL_SSL listeners with a PKCS12 truststore made by keytool: the source with
// SCRAM-SHA-512, the password from ${env:...}; the target with OAUTHBEARER, the
// client secret from ${dir:...}; the truststore password from ${file:...}; and
// misspelled secret keys beside them. Once its gate has opened it is stopped; no
// output of it or of validate may hold any of the secrets.
func TestRunOnSecuredClusterWithProviderSecrets(t *testing.T) {
	s := kafkatest.SharedSecure(t)
	stores := s.ClientStores(t, "PKCS12")
	user, client := s.Users["SCRAM-SHA-512"], s.OAuthClients["long"]
	src, tgt := "secsrc", "sectgt"
	s.EnsureTopic(t, "mm2-offset-syncs."+tgt+".internal", 1, map[string]string{"cleanup.policy": "compact"})
	s.EnsureTopic(t, src+".checkpoints.internal", 1, map[string]string{"cleanup.policy": "compact"})

	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	if err := os.WriteFile(secrets, []byte("truststore.password="+stores.StorePassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretDir := filepath.Join(dir, "k8s-secret")
	if err := os.Mkdir(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secretDir, "client-secret"), []byte(client.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	const envVar = "SECURED_TEST_SCRAM_PASSWORD"
	t.Setenv(envVar, user.Password)
	const planted = "pl4nted-Misspelled-S3cret"
	trust := func(side string) string {
		return fmt.Sprintf(`%[1]s.cluster.security.protocol=SASL_SSL
%[1]s.cluster.ssl.truststore.type=PKCS12
%[1]s.cluster.ssl.truststore.location=%[2]s
%[1]s.cluster.ssl.truststore.password=${file:%[3]s:truststore.password}
`, side, stores.Truststore, secrets)
	}
	cfg := fmt.Sprintf(`config.providers=file,env,dir
config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider
source.cluster.alias=%[1]s
target.cluster.alias=%[2]s
checkpoints.topic.replication.factor=1
sync.group.offsets.enabled=true
checkpointd.group.id=%[3]s
checkpointd.metrics.address=127.0.0.1:0
checkpointd.log.level=debug
source.cluster.bootstrap.servers=%[4]s
source.cluster.sasl.mechanism=SCRAM-SHA-512
source.cluster.sasl.jaas.config=%[5]s required username="%[6]s" password="${env:%[7]s}";
target.cluster.bootstrap.servers=%[8]s
target.cluster.sasl.mechanism=OAUTHBEARER
target.cluster.sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
target.cluster.sasl.oauthbearer.token.endpoint.url=%[9]s
target.cluster.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="%[10]s" clientSecret="${dir:%[11]s:client-secret}";
source.cluster.sasl.jaas.confg=%[5]s required username="x" password="%[12]s";
source.admin.basic.auth.user.info=u:%[12]s
target.producer.ssl.keystore.pasword=%[12]s
`, src, tgt, kafkatest.UniqueName(t, "checkpointd"), s.SASLSSL, scramModule, user.User, envVar,
		s.OAuth, s.OAuthServer.TokenURL, client.ID, secretDir, planted) + trust("source") + trust("target")
	path := filepath.Join(dir, "mm2-checkpoint.properties")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	var validateOut, validateErr syncBuffer
	if err := dispatch(context.Background(), []string{"validate", "--config", path}, &validateOut, &validateErr); err != nil {
		t.Fatalf("validate: %v\n%s%s", err, validateOut.String(), validateErr.String())
	}
	if !strings.Contains(validateOut.String(), "${env:"+envVar+"}") {
		t.Errorf("validate does not name the reference a value came from:\n%s", validateOut.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- dispatch(ctx, []string{"run", "--config", path}, &stdout, &stderr) }()
	opened := false
	for !opened {
		select {
		case err := <-done:
			t.Fatalf("run ended before its gate opened: %v\n%s", err, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		opened = strings.Contains(stderr.String(), "translation gate opened")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	out := stdout.String() + stderr.String() + validateOut.String() + validateErr.String()
	if !strings.Contains(out, "DEBUG") {
		t.Fatalf("no debug output:\n%s", out)
	}
	for what, secret := range map[string]string{"SCRAM password": user.Password, "truststore password": stores.StorePassword,
		"OAuth client secret": client.Secret, "misspelled keys' secret": planted} {
		if strings.Contains(out, secret) {
			t.Errorf("the %s was printed:\n%s", what, out)
		}
	}
}

// grant is one ACL for the restricted user.
type grant struct {
	resource sarama.AclResourceType
	name     string
	op       sarama.AclOperation
}

func (g grant) String() string {
	kind := map[sarama.AclResourceType]string{sarama.AclResourceTopic: "topic", sarama.AclResourceGroup: "group", sarama.AclResourceCluster: "cluster"}[g.resource]
	op := map[sarama.AclOperation]string{sarama.AclOperationRead: "READ", sarama.AclOperationWrite: "WRITE", sarama.AclOperationDescribe: "DESCRIBE", sarama.AclOperationCreate: "CREATE"}[g.op]
	return fmt.Sprintf("%s on %s %s", op, kind, g.name)
}

// aclEnv is one source->target flow on the secured cluster (as both source and
// target, under two aliases) that runs share: a source topic and its remote topic,
// an offset sync mapping upstream offset 5 exactly, and the checkpoints topic made
// beforehand (so CREATE is not needed). Each run brings its own principal, group
// and checkpointd group id.
type aclEnv struct {
	s                                                 *kafkatest.SecureCluster
	mode, src, tgt, topic, remote, syncs, checkpoints string
	commitLog, shardTopic                             string
}

func newACLEnv(t *testing.T, s *kafkatest.SecureCluster, mode string) *aclEnv {
	t.Helper()
	name := kafkatest.UniqueName(t, "")
	suffix := name[len(name)-8:] // unique per test run: the aliases must hold no "."
	e := &aclEnv{s: s, mode: mode, src: "lsrc" + suffix, tgt: "ltgt" + suffix, topic: "orders-" + suffix}
	e.remote = e.src + "." + e.topic
	e.syncs, e.checkpoints = "mm2-offset-syncs."+e.tgt+".internal", e.src+".checkpoints.internal"
	e.commitLog = e.src + ".checkpointd-commits.internal"
	e.shardTopic = e.src + ".checkpointd-shards.internal"
	compact := map[string]string{"cleanup.policy": "compact"}
	s.CreateTopic(t, e.commitLog, 1, compact)
	if mode == "admin-poll" {
		s.CreateTopic(t, e.shardTopic, 50, compact)
	}
	s.CreateTopic(t, e.topic, 1, nil)
	s.CreateTopic(t, e.remote, 1, nil)
	s.CreateTopic(t, e.syncs, 1, compact)
	s.CreateTopic(t, e.checkpoints, 1, compact)
	s.Produce(t, e.topic, 0, 10)
	s.Produce(t, e.remote, 0, 10)
	sync := messages.OffsetSync{TopicPartition: messages.TopicPartition{Topic: e.topic, Partition: 0}, UpstreamOffset: 5, DownstreamOffset: 5}
	produce(t, s.Cluster, e.syncs, sync.Key(), sync.Value())
	// A commit log in use holds records: reading an empty one takes no
	// READ (listing its offsets needs DESCRIBE only), and a run lacking
	// READ would restore its shards before any run wrote to it.
	other := messages.Checkpoint{Group: "not-synced-here", TopicPartition: messages.TopicPartition{Topic: e.remote, Partition: 0},
		UpstreamOffset: 1, DownstreamOffset: 1}
	produce(t, s.Cluster, e.commitLog, other.Key(), other.Value())
	return e
}

// leastGrants are the ACLs docs/operations.md lists for the mode with target
// group sync, for a run with checkpointd group id gid syncing group.
func (e *aclEnv) leastGrants(gid, group string) []grant {
	grants := []grant{
		{sarama.AclResourceTopic, e.syncs, sarama.AclOperationRead},
		{sarama.AclResourceTopic, e.checkpoints, sarama.AclOperationRead},
		{sarama.AclResourceTopic, e.checkpoints, sarama.AclOperationWrite},
		{sarama.AclResourceGroup, group, sarama.AclOperationRead},
		{sarama.AclResourceTopic, e.remote, sarama.AclOperationRead},
		{sarama.AclResourceTopic, e.commitLog, sarama.AclOperationRead},
		{sarama.AclResourceTopic, e.commitLog, sarama.AclOperationWrite},
	}
	if e.mode == "offsets-log" {
		return append(grants,
			grant{sarama.AclResourceTopic, "__consumer_offsets", sarama.AclOperationRead},
			grant{sarama.AclResourceGroup, gid, sarama.AclOperationRead})
	}
	// Admin poll: the instances share the groups through a group over the
	// shard topic on the target.
	return append(grants,
		grant{sarama.AclResourceTopic, e.shardTopic, sarama.AclOperationRead},
		grant{sarama.AclResourceGroup, gid, sarama.AclOperationRead},
		grant{sarama.AclResourceGroup, group, sarama.AclOperationDescribe},
		grant{sarama.AclResourceTopic, e.topic, sarama.AclOperationDescribe})
}

// aclRun is checkpointd running as user with the least grants but the one at
// index drop (-1: none left out).
type aclRun struct {
	e              *aclEnv
	drop           int
	dropped        grant
	group          string
	grants         []grant
	stdout, stderr syncBuffer
	done           chan error
	cancel         context.CancelFunc
}

func (e *aclEnv) start(t *testing.T, user kafkatest.Credentials, drop int) *aclRun {
	t.Helper()
	r := &aclRun{e: e, drop: drop, group: "app-" + user.User, done: make(chan error, 1)}
	gid := "checkpointd-" + user.User
	e.s.CommitOffsets(t, r.group, map[messages.TopicPartition]int64{{Topic: e.topic, Partition: 0}: 5})
	var acls []*sarama.ResourceAcls
	for i, g := range e.leastGrants(gid, r.group) {
		if i == drop {
			r.dropped = g
			continue
		}
		r.grants = append(r.grants, g)
		acls = append(acls, &sarama.ResourceAcls{
			Resource: sarama.Resource{ResourceType: g.resource, ResourceName: g.name, ResourcePatternType: sarama.AclPatternLiteral},
			Acls:     []*sarama.Acl{{Principal: "User:" + user.User, Host: "*", Operation: g.op, PermissionType: sarama.AclPermissionAllow}},
		})
	}
	if err := e.s.Admin(t).CreateACLs(acls); err != nil {
		t.Fatalf("grant %v: %v", r.grants, err)
	}

	props := restrictedConfig(e.s, user)
	props["source.cluster.alias"], props["target.cluster.alias"] = e.src, e.tgt
	for k, v := range map[string]string{
		"groups": r.group, "checkpoints.topic.replication.factor": "1", "sync.group.offsets.enabled": "true",
		"sync.group.offsets.interval.seconds": "1", "checkpointd.group.id": gid, "checkpointd.commit.source": e.mode,
		"checkpointd.admin.poll.interval.ms": "200", "checkpointd.metrics.address": "127.0.0.1:0",
		"admin.timeout.ms": "3000", "checkpointd.health.stage.failure.timeout.ms": "2000",
	} {
		props[k] = v
	}
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s: %q\n", k, v)
	}
	path := filepath.Join(t.TempDir(), user.User+".yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	r.cancel = cancel
	go func() { r.done <- dispatch(ctx, []string{"run", "--config", path}, &r.stdout, &r.stderr) }()
	return r
}

// stopAll stops the runs at once: each may take up to admin.timeout.ms to give
// up on checkpoints it cannot publish.
func stopAll(runs []*aclRun) {
	for _, r := range runs {
		r.cancel()
	}
	for _, r := range runs {
		<-r.done
	}
}

// readyz is the run's /readyz status and body; 0 and why when it cannot be
// asked (yet).
func (r *aclRun) readyz() (int, string) {
	m := regexp.MustCompile(`serving metrics and health.* address=(127\.0\.0\.1:\d+)`).FindStringSubmatch(r.stderr.String())
	if m == nil {
		return 0, "no health address logged"
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + m[1] + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// named are the ways an error may name what the dropped grant allowed: its
// operation, or DESCRIBE (which READ and WRITE imply), on its resource, e.g.
// `READ on topic "mm2-offset-syncs.b.internal"`.
func (g grant) named() []string {
	kind := map[sarama.AclResourceType]string{sarama.AclResourceTopic: "topic", sarama.AclResourceGroup: "group"}[g.resource]
	op := map[sarama.AclOperation]string{sarama.AclOperationRead: "READ", sarama.AclOperationWrite: "WRITE", sarama.AclOperationDescribe: "DESCRIBE"}[g.op]
	out := []string{fmt.Sprintf("%s on %s %q", op, kind, g.name)}
	if op != "DESCRIBE" {
		out = append(out, fmt.Sprintf("DESCRIBE on %s %q", kind, g.name))
	}
	return out
}

// names reports which of g.named() text holds, "" if none; quoted is text
// holding them as a log's quoted value does (`\"`).
func (g grant) names(text string, quoted bool) string {
	for _, n := range g.named() {
		if quoted {
			n = strings.ReplaceAll(n, `"`, `\"`)
		}
		if strings.Contains(text, n) {
			return n
		}
	}
	return ""
}

// synced reports whether the run's target group got the translated offset.
func (r *aclRun) synced(t *testing.T) bool {
	return r.e.s.CommittedOffsets(t, r.group)[messages.TopicPartition{Topic: r.e.remote, Partition: 0}] == 5
}

// TestLeastACLs runs checkpointd, in both commit-source modes and syncing target
// groups, as principals that hold exactly the ACLs docs/operations.md lists for
// the mode, and as principals that each lack one of them, all at once: with all
// of them a source group's commit arrives, translated, in the target group and
// /readyz answers 200; with any one left out the commit does not arrive, and
// /readyz answers 503 naming the missing operation and resource (e.g. `READ on
// topic "mm2-offset-syncs.<target>.internal"`), as does the log. Source and
// target are the same secured cluster under two aliases.
//
// One permission is left out of the /readyz part: DESCRIBE on the source topics
// in admin-poll mode. Without it the broker leaves the topic's partitions out of
// a group's offset fetch without an error, so checkpointd cannot tell.
func TestLeastACLs(t *testing.T) {
	t.Parallel()
	s := kafkatest.SharedSecure(t)
	var runs []*aclRun
	t.Cleanup(func() { stopAll(runs) })
	for _, mode := range []string{"offsets-log", "admin-poll"} {
		e := newACLEnv(t, s, mode)
		var drops []int
		for drop, g := range append([]grant{{}}, e.leastGrants("gid", "group")...) {
			if g.resource == sarama.AclResourceGroup && g.name == "group" && g.op == sarama.AclOperationDescribe {
				// DESCRIBE on the source group (admin-poll): implied here by READ on
				// the same group as a target group, source and target being one cluster.
				continue
			}
			drops = append(drops, drop-1) // -1: none left out
		}
		names := make([]string, len(drops))
		for i, drop := range drops {
			names[i] = fmt.Sprintf("%s-%s-%d", e.src, mode[:5], drop+1)
		}
		users := s.AddSCRAMUsers(t, names...)
		for i, user := range users {
			runs = append(runs, e.start(t, user, drops[i]))
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, r := range runs {
		if r.drop != -1 {
			continue
		}
		for !r.synced(t) {
			select {
			case err := <-r.done:
				t.Fatalf("%s run with the least ACLs ended: %v\n%s", r.e.mode, err, r.stderr.String())
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: target group %s not synced with ACLs %v:\n%s", r.e.mode, r.group, r.grants, r.stderr.String())
			}
		}
	}
	syncedAt := time.Now()
	// A group's join retries its coordinator lookup for about 8 s before a
	// reader sees the authorization failure; then 2 s of failing (the failure
	// timeout) turn /readyz 503; a slow join may take a backoff round more.
	deadline = time.Now().Add(45 * time.Second)
	for _, r := range runs {
		silent := r.e.mode == "admin-poll" && r.dropped == grant{sarama.AclResourceTopic, r.e.topic, sarama.AclOperationDescribe}
		var code int
		var body, named string
		for {
			code, body = r.readyz()
			switch {
			case r.drop == -1:
				named = "ready"
				if code != http.StatusOK {
					named = ""
				}
			case silent:
				named = "not checked"
			case code == http.StatusServiceUnavailable:
				named = r.dropped.names(body, false)
			}
			if named != "" || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		switch {
		case r.drop == -1 && named == "":
			t.Errorf("%s with the least ACLs: /readyz = %d %q", r.e.mode, code, body)
		case r.drop == -1:
			t.Logf("%s with the least ACLs: /readyz = %d %q", r.e.mode, code, body)
		case silent:
			t.Logf("%s without %v: /readyz = %d %q (not checked)", r.e.mode, r.dropped, code, body)
		case named == "":
			t.Errorf("%s without %v: /readyz = %d %q, want 503 naming one of %q\n%s", r.e.mode, r.dropped, code, body, r.dropped.named(), lastLines(r.stderr.String(), 5))
		case r.dropped.names(r.stderr.String(), true) == "":
			t.Errorf("%s without %v: /readyz names %s, the log does not:\n%s", r.e.mode, r.dropped, named, lastLines(r.stderr.String(), 5))
		default:
			t.Logf("%s without %v: /readyz 503 after %v: %s", r.e.mode, r.dropped, time.Since(syncedAt).Round(100*time.Millisecond), body)
		}
	}
	// The runs lacking a permission had as long as the others to sync, and a
	// few seconds more.
	time.Sleep(time.Until(syncedAt.Add(3 * time.Second)))
	for _, r := range runs {
		if r.drop != -1 && r.synced(t) {
			t.Errorf("%s: target group synced without %v: the docs list a permission that is not needed", r.e.mode, r.dropped)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func ptr[T any](v T) *T { return &v }
