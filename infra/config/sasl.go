package config

import (
	"strings"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// Login modules whose username and password options Kafka's clients use for PLAIN and
// SCRAM (either module works with either mechanism: both put the same credentials in
// the JAAS subject).
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// saslConfig maps sasl.mechanism and sasl.jaas.config onto sarama (and, for
// OAUTHBEARER, the token endpoint settings: see oauthConfig; for GSSAPI, Kerberos:
// see gssapiConfig).
func saslConfig(sc *sarama.Config, p props) error {
	// Kafka's default mechanism is GSSAPI, so an unset mechanism means Kerberos.
	mech := strings.ToUpper(strings.TrimSpace(p["sasl.mechanism"].value))
	switch mech {
	case "PLAIN":
		sc.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case "SCRAM-SHA-256":
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA256} }
	case "SCRAM-SHA-512":
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA512} }
	case "", "GSSAPI", "OAUTHBEARER":
	default:
		return p.invalid("sasl.mechanism", "want GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
	}
	if !p.has("sasl.jaas.config") {
		want := "required for SASL: want " + plainLoginModule + ` required username="..." password="...";`
		switch mech {
		case "OAUTHBEARER":
			want = "required for SASL: want " + oauthLoginModule + ` required clientId="..." clientSecret="...";`
		case "":
			// Most often a forgotten sasl.mechanism rather than a Kerberos setup.
			want = "required for SASL: sasl.mechanism is not set, so it is Kafka's default GSSAPI (Kerberos), which wants " +
				krb5LoginModule + ` required useKeyTab=true keyTab="..." principal="...";` + " (or set sasl.mechanism to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)"
		case "GSSAPI":
			want = "required for SASL: want " + krb5LoginModule + ` required useKeyTab=true keyTab="..." principal="...";`
		}
		key := strings.Replace(p["sasl.mechanism"].key, "sasl.mechanism", "sasl.jaas.config", 1)
		if p["sasl.mechanism"].key == "" {
			key = strings.Replace(p["security.protocol"].key, "security.protocol", "sasl.jaas.config", 1)
		}
		return &clientError{key: key, msg: want}
	}
	e, err := parseJAAS(p["sasl.jaas.config"].value)
	if err != nil {
		return p.invalid("sasl.jaas.config", "%v", err)
	}
	sc.Net.SASL.Enable = true
	sc.Net.SASL.Handshake = true
	sc.Net.SASL.Version = sarama.SASLHandshakeV1
	switch mech {
	case "OAUTHBEARER":
		return oauthConfig(sc, p, e)
	case "", "GSSAPI":
		return gssapiConfig(sc, p, e)
	}
	switch e.module {
	case plainLoginModule, scramLoginModule:
	case oauthLoginModule:
		return p.invalid("sasl.jaas.config", "OAuthBearerLoginModule is for sasl.mechanism=OAUTHBEARER; want PlainLoginModule or ScramLoginModule for %s", mech)
	case krb5LoginModule:
		return p.invalid("sasl.jaas.config", "Krb5LoginModule is for sasl.mechanism=GSSAPI; want PlainLoginModule or ScramLoginModule for %s", mech)
	default:
		return p.invalid("sasl.jaas.config", "login module %s is not supported: want %s or %s", e.module, plainLoginModule, scramLoginModule)
	}
	if strings.EqualFold(e.options["tokenauth"], "true") {
		return p.invalid("sasl.jaas.config", "delegation tokens (tokenauth=true) are not supported")
	}
	user, password := e.options["username"], e.options["password"]
	if user == "" || password == "" {
		return p.invalid("sasl.jaas.config", `want username="..." and password="..." options`)
	}
	sc.Net.SASL.User, sc.Net.SASL.Password = user, password
	return nil
}

// scramClient adapts xdg-go/scram to sarama's SCRAMClient. Credentials are used as
// given, without SASLprep, as Kafka's Java client uses them; the server must ask for at
// least 4096 iterations, Kafka's minimum.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (s *scramClient) Begin(user, password, authzID string) error {
	c, err := s.hash.NewClientUnprepped(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = c.WithMinIterations(4096).NewConversation()
	return nil
}

func (s *scramClient) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *scramClient) Done() bool                            { return s.conv.Done() }
