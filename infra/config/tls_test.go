package config

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// pki is a CA with a server certificate for kafka.example and a client certificate, as
// PEM text.
type pki struct {
	caPEM, serverCertPEM, serverKeyPEM, clientCertPEM, clientKeyPEM string
}

func newPKI(t testing.TB) pki {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, usage x509.ExtKeyUsage, dns ...string) (string, string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"}, DNSNames: dns,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf("CERTIFICATE", der), keyPEM(t, key)
	}
	p := pki{caPEM: pemOf("CERTIFICATE", caDER)}
	p.serverCertPEM, p.serverKeyPEM = leaf(2, x509.ExtKeyUsageServerAuth, "kafka.example")
	p.clientCertPEM, p.clientKeyPEM = leaf(3, x509.ExtKeyUsageClientAuth)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyPEM(t testing.TB, k *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf("PRIVATE KEY", der)
}

func pemOf(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// handshake connects to a TLS server holding p's server certificate, which asks for a
// client certificate when requireClient is set, and reports the client's error.
func handshake(t *testing.T, p pki, client *tls.Config, serverName string, requireClient bool) error {
	t.Helper()
	cert, err := tls.X509KeyPair([]byte(p.serverCertPEM), []byte(p.serverKeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	server := &tls.Config{Certificates: []tls.Certificate{cert}}
	if requireClient {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(p.caPEM))
		server.ClientCAs, server.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if conn, err := ln.Accept(); err == nil {
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	// Like sarama, which dials with crypto/tls: the server name is the broker's host
	// unless the config sets one.
	cfg := client.Clone()
	cfg.ServerName = serverName
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	// With TLS 1.3 a rejected client certificate shows on the first read.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	if err != nil && strings.Contains(err.Error(), "EOF") {
		return nil
	}
	return err
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTLS(t *testing.T) {
	p, other := newPKI(t), newPKI(t)
	dir := t.TempDir()
	ca := write(t, dir, "ca.pem", p.caPEM)
	otherCA := write(t, dir, "other-ca.pem", other.caPEM)
	keystore := write(t, dir, "client.pem", p.clientKeyPEM+p.clientCertPEM)
	jksTrust := write(t, dir, "trust.jks", jksTrustStore(t, p.caPEM, "trustpass"))
	jksKeys := write(t, dir, "client.jks", jksKeyStore(t, p.clientKeyPEM, p.clientCertPEM+p.caPEM, "storepass", "keypass"))
	jksSamePass := write(t, dir, "client-same.jks", jksKeyStore(t, p.clientKeyPEM, p.clientCertPEM, "storepass", "storepass"))
	p12Trust := write(t, dir, "trust.p12", p12TrustStore(t, p.caPEM, "trustpass"))
	p12Keys := write(t, dir, "client.p12", p12KeyStore(t, p.clientKeyPEM, p.clientCertPEM, "storepass"))

	tests := []struct {
		name          string
		props         []string
		serverName    string
		requireClient bool
		ok            bool
	}{
		{"PEM truststore", []string{"ssl.truststore.type", "PEM", "ssl.truststore.location", ca}, "kafka.example", false, true},
		{"PEM truststore without a type", []string{"ssl.truststore.location", ca}, "kafka.example", false, true},
		{"inline certificates", []string{"ssl.truststore.type", "PEM", "ssl.truststore.certificates", p.caPEM}, "kafka.example", false, true},
		{"host name checked", []string{"ssl.truststore.location", ca}, "127.0.0.1", false, false},
		{"host name check off", []string{"ssl.truststore.location", ca, "ssl.endpoint.identification.algorithm", ""}, "127.0.0.1", false, true},
		{"chain still checked", []string{"ssl.truststore.location", otherCA, "ssl.endpoint.identification.algorithm", ""}, "127.0.0.1", false, false},
		{"wrong CA", []string{"ssl.truststore.location", otherCA}, "kafka.example", false, false},
		{"system roots", nil, "kafka.example", false, false},
		{"client certificate from a PEM keystore", []string{"ssl.truststore.location", ca, "ssl.keystore.type", "PEM", "ssl.keystore.location", keystore}, "kafka.example", true, true},
		{"inline client certificate", []string{"ssl.truststore.location", ca, "ssl.keystore.type", "PEM", "ssl.keystore.certificate.chain", p.clientCertPEM, "ssl.keystore.key", p.clientKeyPEM}, "kafka.example", true, true},
		{"client certificate missing", []string{"ssl.truststore.location", ca}, "kafka.example", true, false},
		{"JKS truststore", []string{"ssl.truststore.type", "JKS", "ssl.truststore.location", jksTrust, "ssl.truststore.password", "trustpass"}, "kafka.example", false, true},
		{"JKS truststore without a password (no integrity check, as Java)", []string{"ssl.truststore.location", jksTrust}, "kafka.example", false, true},
		{"PKCS12 truststore", []string{"ssl.truststore.type", "PKCS12", "ssl.truststore.location", p12Trust, "ssl.truststore.password", "trustpass"}, "kafka.example", false, true},
		{"PKCS12 truststore read as JKS, as Java does", []string{"ssl.truststore.type", "JKS", "ssl.truststore.location", p12Trust, "ssl.truststore.password", "trustpass"}, "kafka.example", false, true},
		{"JKS truststore, wrong host", []string{"ssl.truststore.location", jksTrust, "ssl.truststore.password", "trustpass"}, "127.0.0.1", false, false},
		{"JKS truststore, host check off", []string{"ssl.truststore.location", jksTrust, "ssl.truststore.password", "trustpass", "ssl.endpoint.identification.algorithm", ""}, "127.0.0.1", false, true},
		{"mTLS with JKS stores and a key password", []string{"ssl.truststore.location", jksTrust, "ssl.truststore.password", "trustpass", "ssl.keystore.location", jksKeys, "ssl.keystore.password", "storepass", "ssl.key.password", "keypass"}, "kafka.example", true, true},
		{"mTLS with a JKS keystore, key password defaults to the store's", []string{"ssl.truststore.location", ca, "ssl.keystore.type", "JKS", "ssl.keystore.location", jksSamePass, "ssl.keystore.password", "storepass"}, "kafka.example", true, true},
		{"mTLS with PKCS12 stores", []string{"ssl.truststore.type", "PKCS12", "ssl.truststore.location", p12Trust, "ssl.truststore.password", "trustpass", "ssl.keystore.type", "PKCS12", "ssl.keystore.location", p12Keys, "ssl.keystore.password", "storepass"}, "kafka.example", true, true},
		{"mTLS with a PKCS12 keystore that lists its CA first", []string{"ssl.truststore.location", ca, "ssl.keystore.location", write(t, dir, "ca-first.p12", p12KeyStore(t, p.clientKeyPEM, p.caPEM+p.clientCertPEM, "storepass")), "ssl.keystore.password", "storepass"}, "kafka.example", true, true},
		{"PKCS12 client certificate from another CA", []string{"ssl.truststore.location", p12Trust, "ssl.truststore.password", "trustpass", "ssl.keystore.location", write(t, dir, "other.p12", p12KeyStore(t, other.clientKeyPEM, other.clientCertPEM, "storepass")), "ssl.keystore.password", "storepass"}, "kafka.example", true, false},
		{"TLS 1.2 only", []string{"ssl.truststore.location", ca, "ssl.enabled.protocols", "TLSv1.2", "ssl.cipher.suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, "kafka.example", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := with("target.cluster.security.protocol", "SSL")
			for i := 0; i < len(tt.props); i += 2 {
				props["target.cluster."+tt.props[i]] = tt.props[i+1]
			}
			cfg := mustConfig(t, props)
			sc := mustSarama(t, cfg, TargetAdmin)
			if !sc.Net.TLS.Enable || sc.Net.SASL.Enable {
				t.Fatal("TLS not enabled")
			}
			err := handshake(t, p, sc.Net.TLS.Config, tt.serverName, tt.requireClient)
			if (err == nil) != tt.ok {
				t.Errorf("handshake error %v, want success %v", err, tt.ok)
			}
		})
	}
}

func TestTLSVersions(t *testing.T) {
	tests := []struct {
		props    []string
		min, max uint16
	}{
		{nil, tls.VersionTLS12, 0},
		{[]string{"ssl.enabled.protocols", "TLSv1.2, TLSv1.3"}, tls.VersionTLS12, tls.VersionTLS13},
		{[]string{"ssl.enabled.protocols", "TLSv1.3"}, tls.VersionTLS13, tls.VersionTLS13},
		{[]string{"ssl.protocol", "TLSv1.2"}, tls.VersionTLS12, tls.VersionTLS12},
		{[]string{"ssl.protocol", "TLSv1.2", "ssl.enabled.protocols", "TLSv1.3"}, tls.VersionTLS13, tls.VersionTLS13},
		{[]string{"ssl.protocol", "TLS"}, tls.VersionTLS12, 0},
	}
	for _, tt := range tests {
		props := with("source.cluster.security.protocol", "SSL")
		for i := 0; i < len(tt.props); i += 2 {
			props["source.cluster."+tt.props[i]] = tt.props[i+1]
		}
		tc := mustSarama(t, mustConfig(t, props), SourceConsumer).Net.TLS.Config
		if tc.MinVersion != tt.min || tc.MaxVersion != tt.max {
			t.Errorf("%v: versions %x-%x, want %x-%x", tt.props, tc.MinVersion, tc.MaxVersion, tt.min, tt.max)
		}
	}
}

func TestTLSProblems(t *testing.T) {
	p := newPKI(t)
	dir := t.TempDir()
	ca := write(t, dir, "ca.pem", p.caPEM)
	garbage := write(t, dir, "store.bin", "\x01\x02 binary")
	jksTrust := write(t, dir, "trust.jks", jksTrustStore(t, p.caPEM, "trustpass"))
	jksKeys := write(t, dir, "client.jks", jksKeyStore(t, p.clientKeyPEM, p.clientCertPEM, "storepass", "keypass"))
	p12Trust := write(t, dir, "trust.p12", p12TrustStore(t, p.caPEM, "trustpass"))
	p12Keys := write(t, dir, "client.p12", p12KeyStore(t, p.clientKeyPEM, p.clientCertPEM, "storepass"))
	encrypted := write(t, dir, "enc.pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"+p.clientCertPEM)
	certOnly := write(t, dir, "cert.pem", p.clientCertPEM)
	tests := []struct {
		name  string
		props []string
		key   string
		want  string
	}{
		{"JKS truststore typed PEM", []string{"ssl.truststore.type", "PEM", "ssl.truststore.location", jksTrust}, "ssl.truststore.location", "a JKS store, but source.cluster.ssl.truststore.type is PEM"},
		{"PEM keystore typed PKCS12", []string{"ssl.keystore.type", "PKCS12", "ssl.keystore.location", certOnly, "ssl.keystore.password", "x"}, "ssl.keystore.location", "a PEM file, but source.cluster.ssl.keystore.type is PKCS12"},
		{"unknown store type", []string{"ssl.truststore.type", "BCFKS"}, "ssl.truststore.type", "want JKS, PKCS12 or PEM"},
		{"not a store", []string{"ssl.truststore.location", garbage}, "ssl.truststore.location", "neither a JKS, a PKCS12 nor a PEM store"},
		{"JKS truststore, wrong password", []string{"ssl.truststore.location", jksTrust, "ssl.truststore.password", "nope"}, "ssl.truststore.password", "does not open the JKS store"},
		{"PKCS12 truststore, wrong password", []string{"ssl.truststore.location", p12Trust, "ssl.truststore.password", "nope"}, "ssl.truststore.password", "does not open the PKCS12 store"},
		{"PKCS12 truststore, no password", []string{"ssl.truststore.location", p12Trust}, "ssl.truststore.location", "protected by a password: set source.cluster.ssl.truststore.password"},
		{"JKS keystore without a store password", []string{"ssl.keystore.location", jksKeys}, "ssl.keystore.location", "needs ssl.keystore.password"},
		{"JKS keystore, wrong store password", []string{"ssl.keystore.location", jksKeys, "ssl.keystore.password", "nope", "ssl.key.password", "keypass"}, "ssl.keystore.password", "does not open the JKS store"},
		{"JKS keystore, key password needed", []string{"ssl.keystore.location", jksKeys, "ssl.keystore.password", "storepass"}, "ssl.keystore.location", "source.cluster.ssl.keystore.password does not decrypt the private key in it: set source.cluster.ssl.key.password"},
		{"JKS keystore, wrong key password", []string{"ssl.keystore.location", jksKeys, "ssl.keystore.password", "storepass", "ssl.key.password", "nope"}, "ssl.key.password", "does not decrypt the private key"},
		{"JKS truststore as keystore", []string{"ssl.keystore.location", jksTrust, "ssl.keystore.password", "trustpass"}, "ssl.keystore.location", "no private key entry"},
		{"PKCS12 keystore, wrong password", []string{"ssl.keystore.location", p12Keys, "ssl.keystore.password", "nope"}, "ssl.keystore.password", "does not open the PKCS12 store"},
		{"inline certificates typed JKS", []string{"ssl.truststore.type", "JKS", "ssl.truststore.certificates", p.caPEM}, "ssl.truststore.certificates", "set ssl.truststore.type=PEM"},
		{"missing truststore", []string{"ssl.truststore.location", filepath.Join(dir, "nope.pem")}, "ssl.truststore.location", "cannot read it"},
		{"PEM truststore with password", []string{"ssl.truststore.type", "PEM", "ssl.truststore.location", ca, "ssl.truststore.password", "x"}, "ssl.truststore.password", "takes no password"},
		{"PEM keystore with store password", []string{"ssl.keystore.type", "PEM", "ssl.keystore.location", p.caPEM, "ssl.keystore.password", "x"}, "ssl.keystore.password", "only ssl.key.password"},
		{"encrypted key", []string{"ssl.keystore.location", encrypted, "ssl.key.password", "x"}, "ssl.keystore.location", "encrypted"},
		{"keystore without a key", []string{"ssl.keystore.location", certOnly}, "ssl.keystore.location", "private key"},
		{"key without chain", []string{"ssl.keystore.key", p.clientKeyPEM}, "ssl.keystore.key", "go together"},
		{"not a certificate", []string{"ssl.truststore.certificates", "hello"}, "ssl.truststore.certificates", "no PEM certificate"},
		{"endpoint algorithm", []string{"ssl.endpoint.identification.algorithm", "ldap"}, "ssl.endpoint.identification.algorithm", "https"},
		{"TLS version", []string{"ssl.enabled.protocols", "SSLv3"}, "ssl.enabled.protocols", "not a TLS version"},
		{"protocol", []string{"ssl.protocol", "SSL"}, "ssl.protocol", "TLSv1.3"},
		{"cipher suite", []string{"ssl.cipher.suites", "TLS_FOO"}, "ssl.cipher.suites", "cipher suite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := with("source.cluster.security.protocol", "SASL_SSL", "source.cluster.sasl.mechanism", "PLAIN",
				"source.cluster.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`)
			for i := 0; i < len(tt.props); i += 2 {
				props["source.cluster."+tt.props[i]] = tt.props[i+1]
			}
			_, rep, err := FromProperties(props, nil, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			if len(rep.Problems) != 1 || rep.Problems[0].Key != "source.cluster."+tt.key || !strings.Contains(rep.Problems[0].Message, tt.want) {
				t.Errorf("problems %v, want one for source.cluster.%s mentioning %q", rep.Problems, tt.key, tt.want)
			}
			if strings.Contains(err.Error(), "BEGIN") {
				t.Errorf("key material printed: %v", err)
			}
		})
	}
}

func derOf(t testing.TB, pemText string) [][]byte {
	t.Helper()
	var out [][]byte
	rest := []byte(pemText)
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out
		}
		out = append(out, b.Bytes)
	}
}

func parseCerts(t testing.TB, pemText string) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for _, der := range derOf(t, pemText) {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func jksTrustStore(t testing.TB, caPEM, password string) string {
	t.Helper()
	ks := jks.New()
	for i, der := range derOf(t, caPEM) {
		err := ks.SetTrustedCertificateEntry(fmt.Sprintf("ca%d", i), jks.TrustedCertificateEntry{
			CreationTime: time.Now(), Certificate: jks.Certificate{Type: "X509", Content: der}})
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func jksKeyStore(t testing.TB, keyPEMText, chainPEM, storePass, keyPass string) string {
	t.Helper()
	ks := jks.New()
	var chain []jks.Certificate
	for _, der := range derOf(t, chainPEM) {
		chain = append(chain, jks.Certificate{Type: "X509", Content: der})
	}
	err := ks.SetPrivateKeyEntry("client", jks.PrivateKeyEntry{
		CreationTime: time.Now(), PrivateKey: derOf(t, keyPEMText)[0], CertificateChain: chain}, []byte(keyPass))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(storePass)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func p12TrustStore(t testing.TB, caPEM, password string) string {
	t.Helper()
	data, err := pkcs12.Modern2023.EncodeTrustStore(parseCerts(t, caPEM), password)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func p12KeyStore(t testing.TB, keyPEMText, chainPEM, password string) string {
	t.Helper()
	key, err := x509.ParsePKCS8PrivateKey(derOf(t, keyPEMText)[0])
	if err != nil {
		t.Fatal(err)
	}
	certs := parseCerts(t, chainPEM)
	data, err := pkcs12.Modern2023.Encode(key, certs[0], certs[1:], password)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// FuzzStores: a corrupt or hostile store file is refused with an error, never a panic
// or a huge allocation.
func FuzzStores(f *testing.F) {
	p, t := newPKI(f), f
	f.Add([]byte(jksTrustStore(t, p.caPEM, "pw")), "pw")
	f.Add([]byte(jksKeyStore(t, p.clientKeyPEM, p.clientCertPEM, "pw", "pw")), "pw")
	f.Add([]byte(p12TrustStore(t, p.caPEM, "pw")), "pw")
	f.Add([]byte(p12KeyStore(t, p.clientKeyPEM, p.clientCertPEM, "pw")), "pw")
	f.Add([]byte(p.caPEM), "")
	f.Add([]byte("\xfe\xed\xfe\xed\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02\xff\xff"), "")
	f.Fuzz(func(t *testing.T, data []byte, password string) {
		switch storeFormat(data) {
		case "JKS":
			_, _ = jksTrusted(data, password)
			_, _ = jksKeyPair(data, password, password)
		case "PKCS12":
			_, _ = pkcs12Trusted(data, password)
			_, _ = pkcs12KeyPair(data, password)
		}
	})
}

// TestJKSLengthsChecked: a JKS store declaring a 4 GB certificate is refused before
// the decoder allocates it.
func TestJKSLengthsChecked(t *testing.T) {
	store := []byte("\xfe\xed\xfe\xed\x00\x00\x00\x02\x00\x00\x00\x01" + // magic, version 2, 1 entry
		"\x00\x00\x00\x02\x00\x01a\x00\x00\x00\x00\x00\x00\x00\x00" + // trusted certificate "a", time 0
		"\x00\x05X.509\xff\xff\xff\xf0") // its type, then a length of almost 4 GB
	if _, err := jksTrusted(store, ""); err == nil || !strings.Contains(err.Error(), "runs past its end") {
		t.Errorf("err %v", err)
	}
	valid := []byte(jksTrustStore(t, newPKI(t).caPEM, "pw"))
	if err := checkJKSLengths(valid); err != nil {
		t.Errorf("a valid store refused: %v", err)
	}
	if err := checkJKSLengths(valid[:len(valid)-1]); err == nil {
		t.Error("a truncated store passed")
	}
}
