package kafkaerr

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/jcmturner/gokrb5/v8/krberror"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// kdcSaid is the error gokrb5 returns when the KDC answers the AS exchange with code.
func kdcSaid(code int32) error {
	return krberror.Errorf(messages.NewKRBError(types.PrincipalName{}, "EXAMPLE.COM", code, ""), krberror.KDCError, "AS Exchange Error: kerberos error response from KDC")
}

func gssapi() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypeGSSAPI
	cfg.Net.SASL.GSSAPI.ServiceName = "kafka"
	return cfg
}

func TestKerberosSteps(t *testing.T) {
	unreachable := krberror.Errorf(errors.New("communication error with KDC via TCP: dial tcp 127.0.0.1:88: connect: connection refused"),
		krberror.NetworkingError, "AS Exchange Error: failed sending AS_REQ to KDC")
	noKDC := krberror.Errorf(errors.New("no KDCs defined in configuration for realm OTHER.COM"), krberror.ConfigError, "error getting KDCs from configuration")
	badReply := krberror.Errorf(errors.New("error decrypting AS_REP encrypted part: integrity verification failed"), krberror.DecryptingError,
		"AS Exchange Error: AS_REP is not valid or client password/keytab incorrect")
	cases := []struct {
		name string
		err  error
		step KerberosStep
		hint string // in the hint
	}{
		{"KDC refuses connections", unreachable, KDCUnreachable, "kdc entries"},
		{"realm without KDC in krb5.conf", noKDC, KDCUnreachable, "krb5.conf"},
		{"wrapped by the caller", fmt.Errorf("connect source: %w", unreachable), KDCUnreachable, "port 88"},
		{"unknown client", kdcSaid(6), ClientUnknown, `principal="name@REALM"`},
		{"unknown broker principal", kdcSaid(7), ServiceUnknown, "kafka/<broker host>"},
		{"wrong password (MIT)", kdcSaid(24), KeyRefused, "wrong password"},
		{"wrong key (Kerby)", kdcSaid(31), KeyRefused, "keytab"},
		{"reply in another key", badReply, KeyRefused, "export it again"},
		{"clock skew", kdcSaid(37), ClockSkew, "NTP"},
		{"ticket expired", kdcSaid(32), Expired, "expired"},
		{"password expired", kdcSaid(23), Expired, "expired"},
		{"revoked", kdcSaid(18), PrincipalRevoked, "locked, disabled or expired"},
		{"no common etype", kdcSaid(14), NoCommonEncryption, "permitted_enctypes"},
		{"other KDC error", kdcSaid(60), OtherKerberos, "sasl.jaas.config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := KerberosStepOf(tc.err); got != tc.step {
				t.Errorf("step %v, want %v (%v)", got, tc.step, tc.err)
			}
			if got := LayerOf(tc.err); got != Kerberos {
				t.Errorf("layer %v, want Kerberos", got)
			}
			hint := Hint(tc.err, gssapi())
			if !strings.HasPrefix(hint, "Kerberos ("+tc.step.String()+"): ") || !strings.Contains(hint, tc.hint) {
				t.Errorf("hint %q, want %q naming the step and %q", hint, "Kerberos ("+tc.step.String()+")", tc.hint)
			}
		})
	}
	for _, err := range []error{io.EOF, sarama.ErrSASLAuthenticationFailed, errors.New("root cause unknown")} {
		if s := KerberosStepOf(err); s != NotKerberos {
			t.Errorf("%v: step %v, want NotKerberos", err, s)
		}
	}
	// The KDC issued a ticket and the broker refused it: the credentials layer, with a
	// Kerberos hint.
	refused := fmt.Errorf("kafka server: %w", sarama.ErrSASLAuthenticationFailed)
	if LayerOf(refused) != Credentials || !strings.Contains(Hint(refused, gssapi()), "service ticket") {
		t.Errorf("broker refusal: layer %v, hint %q", LayerOf(refused), Hint(refused, gssapi()))
	}
}

// FuzzKerberosStepOf: any message is classified without panicking; one that carries
// neither a gokrb5 root cause nor a KRB Error code is not Kerberos's, and one that
// does is at the Kerberos layer with a hint naming its step.
func FuzzKerberosStepOf(f *testing.F) {
	for _, code := range []int32{6, 7, 24, 37, 60} {
		f.Add(kdcSaid(code).Error())
	}
	f.Add("[Root cause: Networking_Error] Networking_Error: AS Exchange Error")
	f.Add("KRB Error: (99999999999999999999) X")
	f.Add("kafka: client has run out of available brokers")
	f.Fuzz(func(t *testing.T, msg string) {
		err := errors.New(msg)
		step := KerberosStepOf(err)
		marked := krbRootCause.MatchString(msg) || krbCode.MatchString(msg)
		if (step != NotKerberos) != marked {
			t.Fatalf("%q: step %v", msg, step)
		}
		if marked && (LayerOf(err) != Kerberos || !strings.HasPrefix(Hint(err, nil), "Kerberos ("+step.String()+")")) {
			t.Fatalf("%q: layer %v, hint %q", msg, LayerOf(err), Hint(err, nil))
		}
	})
}
