package kafkaerr

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func saslSSL() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	return cfg
}

func TestLayerAndHint(t *testing.T) {
	cert := &x509.Certificate{DNSNames: []string{"kafka.example"}}
	cases := []struct {
		name  string
		err   error
		layer Layer
		hint  string // in the hint; "" for no hint
	}{
		{"unknown CA", fmt.Errorf("write: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{Cert: cert}}), TLS, "not signed by a CA in the truststore"},
		{"host name", &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: cert, Host: "127.0.0.1"}}, TLS, "ssl.endpoint.identification.algorithm"},
		{"expired", x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired}, TLS, "expired"},
		{"plaintext listener", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, TLS, "does not speak TLS"},
		{"client certificate refused", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, TLS, "ssl.keystore.location"},
		{"bad password", fmt.Errorf("kafka: %w", sarama.ErrSASLAuthenticationFailed), Credentials, "sasl.jaas.config"},
		{"mechanism not enabled", sarama.ErrUnsupportedSASLMechanism, SASLMechanism, "sasl.enabled.mechanisms"},
		{"no SASL on the listener", sarama.ErrIllegalSASLState, SASLMechanism, "security.protocol"},
		{"topic ACL", fmt.Errorf("describe topic %q: %w", "source.orders", sarama.ErrTopicAuthorizationFailed), Authorization, "ACLs deny"},
		{"group ACL", sarama.ErrGroupAuthorizationFailed, Authorization, "ACLs deny"},
		{"cluster ACL", sarama.ErrClusterAuthorizationFailed, Authorization, "ACLs deny"},
		{"closed", io.EOF, Network, "closed the connection"},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, Network, ""},
		{"other", errors.New("something"), Unknown, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := LayerOf(tc.err); got != tc.layer {
				t.Errorf("layer %v, want %v", got, tc.layer)
			}
			hint := Hint(tc.err, saslSSL())
			if tc.hint == "" && hint != "" || !strings.Contains(hint, tc.hint) {
				t.Errorf("hint %q, want it to say %q", hint, tc.hint)
			}
			if tc.layer == TLS && (strings.Contains(hint, "sasl.") || strings.Contains(hint, "SASL SCRAM") || strings.Contains(hint, "handshake failed: is")) {
				t.Errorf("a TLS failure hinted at SASL: %q", hint)
			}
			if tc.layer != Unknown && !strings.HasPrefix(hint, tc.layer.String()) && hint != "" {
				t.Errorf("hint %q does not start with its layer %q", hint, tc.layer)
			}
		})
	}
}

// TestTLSFailureUnderSASL: a SASL_SSL client whose truststore does not hold the
// broker's CA fails in the TLS handshake that sarama's SASL handshake starts, and
// the error is TLS's, as the issue found it reported with a SASL hint.
func TestTLSFailureUnderSASL(t *testing.T) {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	cfg := saslSSL()
	cfg.Net.SASL.User, cfg.Net.SASL.Password = "u", "p"
	cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return nopSCRAM{} }
	cfg.Net.DialTimeout = 5 * time.Second
	b := sarama.NewBroker(ln.Addr().String())
	if err := b.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	_, err = b.Connected()
	if err == nil {
		t.Fatal("connected")
	}
	if LayerOf(err) != TLS {
		t.Fatalf("%v: layer %v, want TLS", err, LayerOf(err))
	}
	if d := Describe(err, cfg); !strings.Contains(d, "truststore") || strings.Contains(d, "SASL") {
		t.Errorf("described as %q", d)
	}
}

type nopSCRAM struct{}

func (nopSCRAM) Begin(string, string, string) error { return nil }
func (nopSCRAM) Step(string) (string, error)        { return "", nil }
func (nopSCRAM) Done() bool                         { return true }

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestNeeds(t *testing.T) {
	topic := Permission{"READ", "topic", "mm2-offset-syncs.b.internal"}
	group := Permission{"READ", "group", "checkpointd-commit"}
	write := Permission{"WRITE", "topic", "a.checkpoints.internal"}
	denyTopic := fmt.Errorf("consume partition 0: %w", sarama.ErrTopicAuthorizationFailed)
	denyGroup := fmt.Errorf("consumer group g: %w", sarama.ErrGroupAuthorizationFailed)
	cases := []struct {
		name  string
		err   error
		perms []Permission
		want  string // the message; "" for err unchanged
	}{
		{"topic denied: the topic's permission", denyTopic, []Permission{topic, group},
			denyTopic.Error() + ` (authorization: READ on topic "mm2-offset-syncs.b.internal" is needed)`},
		{"group denied: the group's permission", denyGroup, []Permission{topic, group},
			denyGroup.Error() + ` (authorization: READ on group "checkpointd-commit" is needed)`},
		{"no permission of the denied type: all", denyGroup, []Permission{topic, write},
			denyGroup.Error() + ` (authorization: READ on topic "mm2-offset-syncs.b.internal" and WRITE on topic "a.checkpoints.internal" are needed)`},
		{"cluster denied", fmt.Errorf("x: %w", sarama.ErrClusterAuthorizationFailed), []Permission{{"DESCRIBE", "cluster", ""}},
			"x: " + sarama.ErrClusterAuthorizationFailed.Error() + " (authorization: DESCRIBE on the cluster is needed)"},
		{"not authorization", fmt.Errorf("x: %w", sarama.ErrNotCoordinatorForConsumer), []Permission{topic}, ""},
		{"TLS", errors.New("tls: handshake failure"), []Permission{topic}, ""},
		{"nil", nil, []Permission{topic}, ""},
		{"named already", fmt.Errorf(`%w (the principal needs READ on topic "mm2-offset-syncs.b.internal")`, sarama.ErrTopicAuthorizationFailed), []Permission{topic}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Needs(tc.err, tc.perms...)
			if tc.want == "" {
				if got != tc.err {
					t.Fatalf("Needs changed %v into %v", tc.err, got)
				}
				return
			}
			if got.Error() != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if !errors.Is(got, tc.err) || LayerOf(got) != Authorization {
				t.Fatalf("%v: does not wrap %v", got, tc.err)
			}
			if again := Needs(fmt.Errorf("stage: %w", got), group, topic); again.Error() != "stage: "+tc.want {
				t.Fatalf("wrapped twice: %s", again)
			}
		})
	}
}
