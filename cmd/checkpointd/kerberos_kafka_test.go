package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/checkpointd/checkpointd/infra/kafkaerr"
	"github.com/checkpointd/checkpointd/internal/testbed/kafkatest"
	"github.com/checkpointd/checkpointd/messages"
)

const krb5Module = "com.sun.security.auth.module.Krb5LoginModule"

// brokerRefused marks a case the KDC accepts and the broker refuses.
const brokerRefused kafkaerr.KerberosStep = -1

// keytabJAAS is the JAAS entry MM2 users write for a keytab login.
func keytabJAAS(keytab, principal string) string {
	return fmt.Sprintf(`%s required useKeyTab=true storeKey=true keyTab="%s" principal="%s@%s";`, krb5Module, keytab, principal, kafkatest.Realm)
}

// passwordJAAS is checkpointd's password login (no realm: the krb5.conf's default).
func passwordJAAS(principal, password string) string {
	return fmt.Sprintf(`%s required principal="%s" password="%s";`, krb5Module, principal, password)
}

// TestKerberosConnections: checkpointd's GSSAPI settings, as an MM2 config carries
// them, log in to a real KDC (Apache Kerby) with a keytab and with a password and
// talk to a real broker's GSSAPI listener; every failure names its Kerberos step.
func TestKerberosConnections(t *testing.T) {
	t.Parallel()
	s := kafkatest.SharedSecure(t)
	k := s.KDC
	gssapi := func(jaas string, extra ...string) map[string]string {
		p := map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI",
			"sasl.kerberos.service.name": "kafka", "sasl.jaas.config": jaas}
		for i := 0; i+1 < len(extra); i += 2 {
			p[extra[i]] = extra[i+1]
		}
		return p
	}
	krb5 := func(path string) []string { return []string{"KRB5_CONFIG=" + path} }
	byIP := strings.Replace(s.Kerberos, "localhost", "127.0.0.1", 1)
	cases := []struct {
		name  string
		addr  string
		props map[string]string
		env   []string
		step  kafkaerr.KerberosStep // NotKerberos: connects
	}{
		{"keytab login, KRB5_CONFIG", s.Kerberos, gssapi(keytabJAAS(k.ClientKeytab, kafkatest.KeytabPrincipal)), krb5(k.Krb5Conf), kafkaerr.NotKerberos},
		{"keytab login, checkpointd.kerberos.krb5.conf", s.Kerberos, gssapi(keytabJAAS(k.ClientKeytab, kafkatest.KeytabPrincipal)),
			[]string{"CHECKPOINTD_CHECKPOINTD_KERBEROS_KRB5_CONF=" + k.Krb5Conf, "KRB5_CONFIG=" + k.UnreachableKrb5Conf}, kafkaerr.NotKerberos},
		{"password login, realm from default_realm", s.Kerberos, gssapi(passwordJAAS(kafkatest.PasswordPrincipal, k.Password)), krb5(k.Krb5Conf), kafkaerr.NotKerberos},
		{"service name from the JAAS serviceName option", s.Kerberos, map[string]string{"security.protocol": "SASL_PLAINTEXT",
			"sasl.jaas.config": strings.Replace(keytabJAAS(k.ClientKeytab, kafkatest.KeytabPrincipal), ";", ` serviceName="kafka";`, 1)}, krb5(k.Krb5Conf), kafkaerr.NotKerberos},

		{"KDC unreachable", s.Kerberos, gssapi(keytabJAAS(k.ClientKeytab, kafkatest.KeytabPrincipal)), krb5(k.UnreachableKrb5Conf), kafkaerr.KDCUnreachable},
		{"principal unknown to the KDC", s.Kerberos, gssapi(passwordJAAS("nobody", k.Password)), krb5(k.Krb5Conf), kafkaerr.ClientUnknown},
		{"wrong password", s.Kerberos, gssapi(passwordJAAS(kafkatest.PasswordPrincipal, "wrong")), krb5(k.Krb5Conf), kafkaerr.KeyRefused},
		{"keytab older than the principal's key", s.Kerberos, gssapi(keytabJAAS(k.StaleKeytab, kafkatest.StalePrincipal)), krb5(k.Krb5Conf), kafkaerr.KeyRefused},
		{"expired principal", s.Kerberos, gssapi(passwordJAAS(kafkatest.ExpiredPrincipal, k.Password)), krb5(k.Krb5Conf), kafkaerr.PrincipalRevoked},
		{"wrong sasl.kerberos.service.name", s.Kerberos, gssapi(keytabJAAS(k.ClientKeytab, kafkatest.KeytabPrincipal), "sasl.kerberos.service.name", "kafka-broker"), krb5(k.Krb5Conf), kafkaerr.ServiceUnknown},
		{"broker reached by IP, not by its principal's host", byIP, gssapi(keytabJAAS(k.ClientKeytab, kafkatest.KeytabPrincipal)), krb5(k.Krb5Conf), kafkaerr.ServiceUnknown},
		// The skewed KDC allows no skew: the client's service ticket request is refused
		// with KRB_AP_ERR_SKEW, as a KDC whose clock is minutes off refuses it.
		{"clock skew beyond the KDC's allowance", s.Kerberos, gssapi(keytabJAAS(k.SkewedKeytab, kafkatest.KeytabPrincipal)), krb5(k.SkewedKrb5Conf), kafkaerr.ClockSkew},
		// The KDC issues the ticket; the broker, whose keytab lacks the key, refuses it.
		{"broker's keytab behind the KDC", s.Kerberos, gssapi(keytabJAAS(k.RekeyedKeytab, kafkatest.KeytabPrincipal)), krb5(k.RekeyedKrb5Conf), brokerRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err, sc := dialWith(t, tc.addr, tc.props, tc.env)
			switch {
			case tc.step == brokerRefused:
				if err == nil || kafkaerr.LayerOf(err) != kafkaerr.Credentials || !strings.Contains(kafkaerr.Hint(err, sc), "service ticket") {
					t.Fatalf("%v: layer %s, hint %q; want the broker's refusal at the credentials layer", err, kafkaerr.LayerOf(err), kafkaerr.Hint(err, sc))
				}
				t.Logf("%s", kafkaerr.Describe(err, sc))
			case tc.step == kafkaerr.NotKerberos && err != nil:
				t.Fatalf("did not connect: %s", kafkaerr.Describe(err, sc))
			case tc.step == kafkaerr.NotKerberos:
			case err == nil:
				t.Fatalf("connected; want a Kerberos failure (%s)", tc.step)
			case kafkaerr.LayerOf(err) != kafkaerr.Kerberos || kafkaerr.KerberosStepOf(err) != tc.step:
				t.Fatalf("%v: layer %s, step %s; want Kerberos, %s", err, kafkaerr.LayerOf(err), kafkaerr.KerberosStepOf(err), tc.step)
			case !strings.HasPrefix(kafkaerr.Hint(err, sc), "Kerberos ("+tc.step.String()+")"):
				t.Fatalf("hint %q does not name the step", kafkaerr.Hint(err, sc))
			default:
				t.Logf("%s", kafkaerr.Describe(err, sc))
			}
		})
	}
}

// TestRunOnKerberosCluster: checkpointd runs a flow whose source clients log in with
// a keytab and whose target clients log in with a password, against a real KDC and
// broker (one cluster under two aliases): a source group's commit arrives translated
// in its target group, so it read the offset syncs and the source commits and wrote
// the checkpoint and the commit; the password is never printed.
func TestRunOnKerberosCluster(t *testing.T) {
	t.Parallel()
	s := kafkatest.SharedSecure(t)
	k := s.KDC
	e := newACLEnv(t, s, "offsets-log") // topics, records and an offset sync 5 -> 5
	group := kafkatest.UniqueName(t, "krb-app")
	s.CommitOffsets(t, group, map[messages.TopicPartition]int64{{Topic: e.topic, Partition: 0}: 5})
	cfg := fmt.Sprintf(`source.cluster.alias=%[1]s
target.cluster.alias=%[2]s
groups=%[3]s
checkpoints.topic.replication.factor=1
sync.group.offsets.enabled=true
sync.group.offsets.interval.seconds=1
checkpointd.group.id=%[4]s
checkpointd.metrics.address=127.0.0.1:0
checkpointd.kerberos.krb5.conf=%[5]s
source.cluster.bootstrap.servers=%[6]s
source.cluster.security.protocol=SASL_PLAINTEXT
source.cluster.sasl.mechanism=GSSAPI
source.cluster.sasl.kerberos.service.name=kafka
source.cluster.sasl.jaas.config=%[7]s
target.cluster.bootstrap.servers=%[6]s
target.cluster.security.protocol=SASL_PLAINTEXT
target.cluster.sasl.mechanism=GSSAPI
target.cluster.sasl.kerberos.service.name=kafka
target.cluster.sasl.jaas.config=%[8]s
`, e.src, e.tgt, group, kafkatest.UniqueName(t, "checkpointd"), k.Krb5Conf, s.Kerberos,
		keytabJAAS(k.ClientKeytab, kafkatest.KeytabPrincipal), passwordJAAS(kafkatest.PasswordPrincipal, k.Password))
	path := filepath.Join(t.TempDir(), "mm2-checkpoint.properties")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- dispatch(ctx, []string{"run", "--config", path}, &stdout, &stderr) }()
	remote := messages.TopicPartition{Topic: e.remote, Partition: 0}
	deadline := time.Now().Add(60 * time.Second)
	for s.CommittedOffsets(t, group)[remote] != 5 {
		select {
		case err := <-done:
			t.Fatalf("run ended before the target group was synced: %v\n%s", err, stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("target group %s not synced to 5 on %s in 60s:\n%s", group, e.remote, stderr.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if out := stdout.String() + stderr.String(); strings.Contains(out, k.Password) {
		t.Errorf("the Kerberos password was printed:\n%s", out)
	}
}
