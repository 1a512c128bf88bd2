package kafkatest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// SecureCluster is one single-node Kafka cluster with secured listeners, as
// managed and self-run clusters are set up:
//
//   - SASL_SSL on SASLSSL, with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, one user
//     each (Users);
//   - SSL on MTLS, requiring a client certificate signed by the test CA
//     (ssl.client.auth=required): see ClientStores;
//   - SASL_SSL with OAUTHBEARER only on OAuth, validating JWTs from OAuthServer;
//   - SASL_PLAINTEXT with GSSAPI only on Kerberos (advertised as localhost, the host
//     of the broker's principal kafka/localhost), with the principals of KDC;
//   - the embedded Cluster's PLAINTEXT listener (Bootstrap) for setting up, whose
//     ANONYMOUS principal is a super user.
//
// Both secured listeners present a certificate for 127.0.0.1 and localhost signed
// by the CA in CAFile. The broker runs StandardAuthorizer and denies what no ACL
// allows. ANONYMOUS, the Users and ClientPrincipal are super users; Restricted (a
// SCRAM-SHA-512 user) may do only what the test grants it with ACLs.
type SecureCluster struct {
	*Cluster
	SASLSSL    string // host:port of the SASL_SSL listener
	MTLS       string // host:port of the SSL listener that requires client certificates
	CAFile     string // the CA of every certificate, PEM
	Users      map[string]Credentials
	Restricted Credentials // SCRAM-SHA-512, no ACLs of its own
	// OAuth is the SASL_SSL listener taking OAUTHBEARER only, with JWTs the broker
	// verifies against OAuthServer's JWKS; OAuthClients are super users.
	OAuth        string
	OAuthServer  *OAuthServer
	OAuthClients map[string]OAuthClient // "long": 1 h tokens, "short": 3 s tokens, "forged": signed with a key not in the JWKS
	// Kerberos is the SASL_PLAINTEXT listener taking GSSAPI only, as localhost:port;
	// KDC's client principals are super users.
	Kerberos string
	KDC      *KDC

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	dir   string
}

// Credentials are a SASL user's.
type Credentials struct{ User, Password string }

var sharedSecure startOnce[*SecureCluster]

// SharedSecure returns the secured cluster shared by the tests of this test
// binary, starting it on first use; RunMain tears it down. Like Shared, it skips
// with -short and fails without Java or the jars.
func SharedSecure(t testing.TB) *SecureCluster {
	t.Helper()
	requireShared(t, "kafkatest.SharedSecure")
	c, err := sharedSecure.get(StartSecureCluster, func(c *SecureCluster) {
		t.Logf("kafkatest: secured cluster ready in %s, its KDC in %s (SASL_SSL %s, mTLS %s, GSSAPI %s)",
			c.ReadyIn.Round(time.Millisecond), c.KDC.ReadyIn.Round(time.Millisecond), c.SASLSSL, c.MTLS, c.Kerberos)
	})
	if err != nil {
		failUnavailable(t, "secured Kafka cluster", err)
	}
	return c
}

// StartSecureCluster starts a SecureCluster. It is torn down with the beds by
// RunMain (or an interrupt).
func StartSecureCluster(ctx context.Context) (*SecureCluster, error) {
	start := time.Now()
	lib, err := Jars(ctx)
	if err != nil {
		return nil, fmt.Errorf("start secured cluster: %w", err)
	}
	if _, err := javaBin(); err != nil {
		return nil, fmt.Errorf("start secured cluster: %w", err)
	}
	sweepStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("start secured cluster: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start secured cluster: %w", err)
	}
	b := &Bed{Lib: lib, Dir: dir, started: make(chan struct{})}
	ctx, b.cancelStart = context.WithCancel(ctx)
	defer b.cancelStart()
	register(b)
	s := &SecureCluster{dir: dir, Users: map[string]Credentials{
		"PLAIN":         {"plain-user", randomSecret()},
		"SCRAM-SHA-256": {"scram256-user", randomSecret()},
		"SCRAM-SHA-512": {"scram512-user", randomSecret()},
	}, Restricted: Credentials{"restricted-user", randomSecret()}}
	s.OAuthClients = map[string]OAuthClient{
		"long":   {ID: "checkpointd-oauth", Secret: randomSecret(), Lifetime: time.Hour},
		"short":  {ID: "checkpointd-oauth-short", Secret: randomSecret(), Lifetime: 3 * time.Second},
		"forged": {ID: "checkpointd-oauth-forged", Secret: randomSecret(), Lifetime: time.Hour, Forged: true},
	}
	if s.OAuthServer, err = startOAuthServer(s.OAuthClients["long"], s.OAuthClients["short"], s.OAuthClients["forged"]); err == nil {
		b.oauth = s.OAuthServer
		err = s.writePKI()
	}
	if err == nil {
		s.KDC, err = startKDC(ctx, filepath.Join(dir, "kdc"))
		b.kdc = s.KDC
	}
	if err != nil {
		close(b.started)
		_ = b.Close()
		return nil, fmt.Errorf("start secured cluster: %w", err)
	}
	b.Source, err = startClusterSpec(ctx, lib, "secure", dir, s.spec())
	close(b.started)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("start secured cluster: %w", err)
	}
	s.Cluster = b.Source
	s.SASLSSL = "127.0.0.1:" + strconv.Itoa(s.extraPorts[0])
	s.MTLS = "127.0.0.1:" + strconv.Itoa(s.extraPorts[1])
	s.OAuth = "127.0.0.1:" + strconv.Itoa(s.extraPorts[2])
	s.Kerberos = "localhost:" + strconv.Itoa(s.extraPorts[3])
	s.ReadyIn = time.Since(start)
	return s, nil
}

func randomSecret() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "pw-" + hex.EncodeToString(b[:])
}

func (s *SecureCluster) spec() clusterSpec {
	var scram []string
	add := func(mech string, u Credentials) {
		scram = append(scram, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", mech, u.User, u.Password))
	}
	add("SCRAM-SHA-256", s.Users["SCRAM-SHA-256"])
	add("SCRAM-SHA-512", s.Users["SCRAM-SHA-512"])
	add("SCRAM-SHA-512", s.Restricted)
	plain := s.Users["PLAIN"]
	supers := []string{"User:ANONYMOUS", ClientPrincipal}
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		supers = append(supers, "User:"+s.Users[mech].User)
	}
	for _, c := range s.OAuthClients {
		supers = append(supers, "User:"+c.ID)
	}
	// Kafka's default principal.to.local rules give a Kerberos client of the default
	// realm its short name.
	supers = append(supers, "User:"+KeytabPrincipal, "User:"+PasswordPrincipal)
	return clusterSpec{
		extraPorts: 4,
		formatArgs: scram,
		jvmFlags:   append(s.OAuthServer.jvmFlags(), s.KDC.jvmFlags()...),
		props: func(ports []int) map[string]string {
			addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
			listeners := "PLAINTEXT://" + addr(0) + ",CONTROLLER://" + addr(1) + ",SASL_SSL://" + addr(2) + ",MTLS://" + addr(3) + ",OAUTH://" + addr(4)
			advertised := listeners + ",KERBEROS://localhost:" + strconv.Itoa(ports[5])
			listeners += ",KERBEROS://" + addr(5)
			const scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
			props := s.OAuthServer.brokerProps()
			maps.Copy(props, map[string]string{
				"listeners":                          listeners,
				"advertised.listeners":               advertised,
				"listener.security.protocol.map":     "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL,OAUTH:SASL_SSL,KERBEROS:SASL_PLAINTEXT",
				"ssl.keystore.type":                  "PEM",
				"ssl.keystore.location":              filepath.Join(s.dir, "broker.pem"),
				"ssl.truststore.type":                "PEM",
				"ssl.truststore.location":            s.CAFile,
				"listener.name.mtls.ssl.client.auth": "required",
				"sasl.enabled.mechanisms":            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
				"listener.name.sasl_ssl.plain.sasl.jaas.config": fmt.Sprintf(
					`org.apache.kafka.common.security.plain.PlainLoginModule required user_%s="%s";`, plain.User, plain.Password),
				"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scramModule,
				"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scramModule,
				"authorizer.class.name":                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
				"super.users":                                           strings.Join(supers, ";"),
				"allow.everyone.if.no.acl.found":                        "false",
			})
			maps.Copy(props, s.KDC.brokerProps())
			return props
		},
	}
}

// writePKI makes the CA and the broker's certificate (for 127.0.0.1 and
// localhost), as PEM files in the cluster's parent dir.
func (s *SecureCluster) writePKI() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafkatest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("make CA: %w", err)
	}
	if s.ca, err = x509.ParseCertificate(der); err != nil {
		return err
	}
	s.caKey = key
	s.CAFile = filepath.Join(s.dir, "ca.pem")
	if err := os.WriteFile(s.CAFile, pemBlock("CERTIFICATE", der), 0o644); err != nil {
		return err
	}
	brokerKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	brokerDER, err := s.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kafkatest broker"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, &brokerKey.PublicKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(brokerKey)
	if err != nil {
		return err
	}
	pemFile := append(pemBlock("PRIVATE KEY", keyDER), pemBlock("CERTIFICATE", brokerDER)...)
	return os.WriteFile(filepath.Join(s.dir, "broker.pem"), pemFile, 0o600)
}

var serial struct {
	mu sync.Mutex
	n  int64
}

// sign issues a certificate from the template for pub, signed by the CA.
func (s *SecureCluster) sign(tmpl *x509.Certificate, pub any) ([]byte, error) {
	serial.mu.Lock()
	serial.n++
	tmpl.SerialNumber = big.NewInt(100 + serial.n)
	serial.mu.Unlock()
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, pub, s.caKey)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", tmpl.Subject.CommonName, err)
	}
	return der, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// ClientPrincipal is the principal the broker gives clients of ClientStores.
const ClientPrincipal = "User:CN=checkpointd-client"

// Stores are a client's keystore and truststore files, made by keytool.
type Stores struct {
	Type                 string // JKS or PKCS12
	Keystore, Truststore string
	StorePassword        string // of the keystore and the truststore
	KeyPassword          string // of the key in the keystore; the store password for PKCS12
}

// ClientStores makes, with the JDK's keytool as an operator would, a keystore
// (JKS or PKCS12) holding a client key pair whose certificate the test CA signs,
// and a truststore of the same type holding the CA: what an SSL client with
// ssl.client.auth=required needs. JKS keys get their own password.
func (s *SecureCluster) ClientStores(t testing.TB, storeType string) Stores {
	t.Helper()
	dir := t.TempDir()
	st := Stores{
		Type:          storeType,
		Keystore:      filepath.Join(dir, "client."+strings.ToLower(storeType)),
		Truststore:    filepath.Join(dir, "trust."+strings.ToLower(storeType)),
		StorePassword: randomSecret(),
	}
	st.KeyPassword = st.StorePassword
	if storeType == "JKS" {
		st.KeyPassword = randomSecret()
	}
	ks := []string{"-keystore", st.Keystore, "-storetype", storeType, "-storepass", st.StorePassword}
	csr, caFile, certFile := filepath.Join(dir, "client.csr"), filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem")
	keytool(t, append([]string{"-genkeypair", "-alias", "client", "-keyalg", "EC", "-groupname", "secp256r1",
		"-dname", "CN=checkpointd-client", "-validity", "2", "-keypass", st.KeyPassword}, ks...)...)
	keytool(t, append([]string{"-certreq", "-alias", "client", "-keypass", st.KeyPassword, "-file", csr}, ks...)...)
	certDER, err := s.signCSR(csr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pemBlock("CERTIFICATE", certDER), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, pemBlock("CERTIFICATE", s.ca.Raw), 0o644); err != nil {
		t.Fatal(err)
	}
	keytool(t, append([]string{"-importcert", "-noprompt", "-alias", "ca", "-file", caFile}, ks...)...)
	keytool(t, append([]string{"-importcert", "-alias", "client", "-keypass", st.KeyPassword, "-file", certFile}, ks...)...)
	keytool(t, "-importcert", "-noprompt", "-alias", "ca", "-file", caFile,
		"-keystore", st.Truststore, "-storetype", storeType, "-storepass", st.StorePassword)
	return st
}

func (s *SecureCluster) signCSR(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM certificate request", path)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s.sign(&x509.Certificate{Subject: req.Subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, req.PublicKey)
}

// keytool runs the JDK's keytool, failing the test with its output.
func keytool(t testing.TB, args ...string) {
	t.Helper()
	bin, err := keytoolBin()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("keytool %s: %v\n%s", args[0], err, out)
	}
}

func keytoolBin() (string, error) {
	java, err := javaBin()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(java), "keytool")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath("keytool"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: keytool not found beside %s or on PATH (install a Java 17 JDK)", ErrUnavailable, java)
}

// AddSCRAMUsers creates SCRAM-SHA-512 users with no ACLs (principals of their own,
// so that tests granting ACLs do not see each other's), in one request, and waits
// until the broker authenticates each.
func (s *SecureCluster) AddSCRAMUsers(t testing.TB, names ...string) []Credentials {
	t.Helper()
	out := make([]Credentials, len(names))
	upserts := make([]sarama.AlterUserScramCredentialsUpsert, len(names))
	for i, name := range names {
		out[i] = Credentials{User: name, Password: randomSecret()}
		salt := make([]byte, 16)
		_, _ = rand.Read(salt)
		upserts[i] = sarama.AlterUserScramCredentialsUpsert{
			Name: name, Mechanism: sarama.SCRAM_MECHANISM_SHA_512, Iterations: 4096, Salt: salt, Password: []byte(out[i].Password),
		}
	}
	res, err := s.Admin(t).UpsertUserScramCredentials(upserts)
	if err != nil {
		t.Fatalf("add SCRAM users %v: %v", names, err)
	}
	for _, r := range res {
		if !errors.Is(r.ErrorCode, sarama.ErrNoError) {
			t.Fatalf("add SCRAM user %s: %v", r.User, r.ErrorCode)
		}
	}
	for _, c := range out {
		WaitFor(t, 30*time.Second, "SCRAM user "+c.User, func() error { return s.authenticates(c) })
	}
	return out
}

// authenticates opens a SASL_SSL connection as c.
func (s *SecureCluster) authenticates(c Credentials) error {
	cfg := s.SaramaConfig()
	cfg.Net.TLS.Enable = true
	pool := x509.NewCertPool()
	pool.AddCert(s.ca)
	cfg.Net.TLS.Config = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	cfg.Net.SASL.Enable, cfg.Net.SASL.Handshake = true, true
	cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	cfg.Net.SASL.User, cfg.Net.SASL.Password = c.User, c.Password
	cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramSHA512{} }
	b := sarama.NewBroker(s.SASLSSL)
	if err := b.Open(cfg); err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	_, err := b.Connected()
	return err
}

// scramSHA512 is a SCRAM-SHA-512 client for sarama.
type scramSHA512 struct{ conv *scram.ClientConversation }

func (s *scramSHA512) Begin(user, password, authzID string) error {
	c, err := scram.SHA512.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *scramSHA512) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *scramSHA512) Done() bool                            { return s.conv.Done() }
