package kafkalog

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func TestDescribeDialError(t *testing.T) {
	sasl := sarama.NewConfig()
	sasl.Net.SASL.Enable = true
	sasl.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	tlsCfg := sarama.NewConfig()
	tlsCfg.Net.TLS.Enable = true
	saslSSL := sarama.NewConfig()
	saslSSL.Net.TLS.Enable = true
	saslSSL.Net.SASL.Enable = true
	saslSSL.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	tests := []struct {
		name string
		err  error
		cfg  *sarama.Config
		want string // the hint; "" for none
	}{
		{"nothing listens", refused, sasl, ""},
		{"bad credentials", sarama.ErrSASLAuthenticationFailed, sasl, "SASL credentials: the broker refused the username and password for SCRAM-SHA-512"},
		{"listener without SASL", sarama.ErrIllegalSASLState, sasl, "SASL mechanism: the listener does not accept SASL SCRAM-SHA-512"},
		{"TLS to a plaintext listener", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, tlsCfg, "TLS: the listener does not speak TLS"},
		{"SASL to a plaintext listener", io.EOF, sasl, "network: the broker closed the connection: is security.protocol (SASL_PLAINTEXT) right"},
		{"untrusted certificate under SASL_SSL", x509.UnknownAuthorityError{}, saslSSL, "TLS: the broker's certificate is not signed by a CA in the truststore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeDialError(tt.err, tt.cfg)
			if !strings.HasPrefix(got, tt.err.Error()) {
				t.Errorf("%q lost the cause %q", got, tt.err)
			}
			if tt.want == "" && got != tt.err.Error() {
				t.Errorf("got %q, want the cause alone", got)
			}
			if tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

// A broker that refuses connections is named in the error, which still
// matches sarama.ErrOutOfBrokers.
func TestNewClientNamesEachBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // now nothing listens there
	cfg := sarama.NewConfig()
	cfg.Metadata.Retry.Max = 0
	cfg.Net.DialTimeout = 2 * time.Second
	client, err := NewClient([]string{addr}, cfg)
	if err == nil {
		client.Close()
		t.Fatal("connected to a closed port")
	}
	if !errors.Is(err, sarama.ErrOutOfBrokers) {
		t.Errorf("%v: errors.Is(ErrOutOfBrokers) is false", err)
	}
	if !strings.Contains(err.Error(), "broker "+addr+": ") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("%v: does not say that broker %s refused", err, addr)
	}
}
