package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// Role is one Kafka client checkpointd makes.
type Role int

const (
	SourceConsumer Role = iota
	SourceAdmin
	SourceProducer
	TargetConsumer
	TargetAdmin
	TargetProducer
)

var allRoles = []Role{SourceConsumer, SourceAdmin, SourceProducer, TargetConsumer, TargetAdmin, TargetProducer}

func (r Role) side() string {
	if r <= SourceProducer {
		return "source"
	}
	return "target"
}

func (r Role) kind() string {
	switch r {
	case SourceConsumer, TargetConsumer:
		return "consumer"
	case SourceAdmin, TargetAdmin:
		return "admin"
	}
	return "producer"
}

func (r Role) String() string { return r.side() + "-" + r.kind() }

// clientKeys are the Kafka client properties checkpointd maps onto sarama.
var clientKeys = map[string]struct{}{
	"bootstrap.servers": {}, "client.id": {}, "security.protocol": {}, "request.timeout.ms": {}, "client.rack": {},
	"sasl.mechanism": {}, "sasl.jaas.config": {},
	"ssl.truststore.type": {}, "ssl.truststore.location": {}, "ssl.truststore.certificates": {},
	"ssl.keystore.type": {}, "ssl.keystore.location": {}, "ssl.keystore.certificate.chain": {}, "ssl.keystore.key": {},
	"ssl.key.password": {}, "ssl.keystore.password": {}, "ssl.truststore.password": {},
	"ssl.endpoint.identification.algorithm": {}, "ssl.protocol": {}, "ssl.enabled.protocols": {},
	"isolation.level": {}, "auto.offset.reset": {}, "enable.auto.commit": {},
}

// clientProps merges a role's client settings with MM2's precedence (spec
// §1.2): <side>.cluster.* connection keys, then <kind>.*, then <side>.<kind>.*.
func (c *Config) clientProps(role Role) map[string]string {
	out := map[string]string{}
	layer := func(prefix string, onlyConnection bool) {
		for k, v := range c.Raw {
			if rest, ok := strings.CutPrefix(k, prefix); ok && (!onlyConnection || isClientConnectionKey(rest)) {
				out[rest] = strings.TrimSpace(v)
			}
		}
	}
	layer(role.side()+".cluster.", true)
	layer(role.kind()+".", false)
	layer(role.side()+"."+role.kind()+".", false)
	delete(out, "poll.timeout.ms") // consumer.poll.timeout.ms is a connector key, not a client one
	return out
}

// SaramaConfig builds the sarama configuration for one client role.
func (c *Config) SaramaConfig(role Role) (*sarama.Config, error) {
	p := c.clientProps(role)
	sc := sarama.NewConfig()
	sc.Version = c.KafkaVersion
	if sc.Version == (sarama.KafkaVersion{}) {
		sc.Version = sarama.V4_1_0_0
	}
	sc.ClientID = "checkpointd-" + c.SourceAlias + "->" + c.TargetAlias + "-" + role.String()
	if id := p["client.id"]; id != "" {
		sc.ClientID = id + "|" + sc.ClientID
	}
	sc.RackID = p["client.rack"]
	sc.Metadata.AllowAutoTopicCreation = false
	if v := p["request.timeout.ms"]; v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s request.timeout.ms=%q: want a positive number of milliseconds", role, v)
		}
		sc.Net.ReadTimeout = time.Duration(ms) * time.Millisecond
		sc.Admin.Timeout = sc.Net.ReadTimeout
	}
	proto := strings.ToUpper(p["security.protocol"])
	switch proto {
	case "", "PLAINTEXT":
	case "SSL", "SASL_SSL", "SASL_PLAINTEXT":
	default:
		return nil, fmt.Errorf("%s security.protocol=%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", role, p["security.protocol"])
	}
	if proto == "SSL" || proto == "SASL_SSL" {
		tc, err := tlsConfig(role, p)
		if err != nil {
			return nil, err
		}
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = tc
	}
	if proto == "SASL_SSL" || proto == "SASL_PLAINTEXT" {
		if err := saslConfig(role, p, sc); err != nil {
			return nil, err
		}
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("%s client config: %w", role, err)
	}
	return sc, nil
}

func tlsConfig(role Role, p map[string]string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := strings.ToUpper(p[k]); t != "" && t != "PEM" {
			return nil, fmt.Errorf("%s %s=%s: only PEM is supported; convert the store with keytool/openssl to PEM", role, k, p[k])
		}
	}
	pool, err := pemBlock(role, p, "ssl.truststore.certificates", "ssl.truststore.location")
	if err != nil {
		return nil, err
	}
	if pool != nil {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pool) {
			return nil, fmt.Errorf("%s ssl.truststore: no PEM certificate found", role)
		}
		tc.RootCAs = roots
	}
	chain, err := pemBlock(role, p, "ssl.keystore.certificate.chain", "ssl.keystore.location")
	if err != nil {
		return nil, err
	}
	if chain != nil {
		key := []byte(p["ssl.keystore.key"])
		if len(key) == 0 {
			key = chain // a PEM keystore file holds key and certificates together
		}
		cert, err := tls.X509KeyPair(chain, key)
		if err != nil {
			return nil, fmt.Errorf("%s ssl.keystore: %v (encrypted keys are not supported: decrypt with openssl)", role, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if alg, ok := p["ssl.endpoint.identification.algorithm"]; ok && alg == "" {
		// Kafka's way to turn off host name checks; the chain is still verified.
		tc.InsecureSkipVerify = true
		roots := tc.RootCAs
		tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChainOnly(raw, roots)
		}
	}
	return tc, nil
}

func verifyChainOnly(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return fmt.Errorf("no server certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// pemBlock returns inline PEM (inlineKey) or the file at fileKey, or nil.
func pemBlock(role Role, p map[string]string, inlineKey, fileKey string) ([]byte, error) {
	if v := p[inlineKey]; v != "" {
		return []byte(v), nil
	}
	if path := p[fileKey]; path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", role, fileKey, err)
		}
		if !strings.Contains(string(b), "-----BEGIN") {
			return nil, fmt.Errorf("%s %s=%s: not a PEM file (JKS and PKCS12 stores are not supported: convert to PEM)", role, fileKey, path)
		}
		return b, nil
	}
	return nil, nil
}

var jaasOption = regexp.MustCompile(`(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"`)

func saslConfig(role Role, p map[string]string, sc *sarama.Config) error {
	mech := strings.ToUpper(p["sasl.mechanism"])
	if mech == "" {
		mech = "GSSAPI" // Kafka's default, which we cannot do
	}
	opts := map[string]string{}
	for _, m := range jaasOption.FindAllStringSubmatch(p["sasl.jaas.config"], -1) {
		opts[m[1]] = strings.ReplaceAll(m[2], `\"`, `"`)
	}
	sc.Net.SASL.Enable = true
	sc.Net.SASL.Handshake = true
	sc.Net.SASL.User, sc.Net.SASL.Password = opts["username"], opts["password"]
	switch mech {
	case "PLAIN":
		sc.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case "SCRAM-SHA-256":
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA256} }
	case "SCRAM-SHA-512":
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA512} }
	default:
		return fmt.Errorf("%s sasl.mechanism=%s: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", role, mech)
	}
	if sc.Net.SASL.User == "" {
		return fmt.Errorf(`%s sasl.jaas.config: no username="..." found`, role)
	}
	return nil
}

// scramClient adapts xdg-go/scram to sarama's SCRAMClient.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (s *scramClient) Begin(user, password, authzID string) error {
	c, err := s.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *scramClient) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *scramClient) Done() bool                            { return s.conv.Done() }
