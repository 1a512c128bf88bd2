package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

const testKrb5Conf = `[libdefaults]
 default_realm = EXAMPLE.COM
[realms]
 EXAMPLE.COM = {
  kdc = 127.0.0.1:88
 }
`

// writeKeytab writes a keytab holding a key of principal (name/instance) in realm.
func writeKeytab(t *testing.T, principal, realm string) string {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry(principal, realm, "pw", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "client.keytab")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGSSAPI(t *testing.T) {
	krb5 := writeFile(t, "krb5.conf", testKrb5Conf)
	noRealm := writeFile(t, "norealm.conf", "[libdefaults]\n dns_lookup_kdc = false\n")
	kt := writeKeytab(t, "mm2", "EXAMPLE.COM")
	serviceKT := writeKeytab(t, "mm2/host.example.com", "EXAMPLE.COM")
	const module = "com.sun.security.auth.module.Krb5LoginModule required "
	tests := []struct {
		name     string
		props    []string // source.cluster.* after security.protocol=SASL_PLAINTEXT
		env      []string
		want     sarama.GSSAPIConfig // for success
		wantErr  string              // the problem's key ...
		wantText []string            // ... and words of its message
	}{
		{name: "keytab, as MM2 users write it",
			props: []string{"sasl.mechanism", "GSSAPI", "sasl.kerberos.service.name", "kafka",
				"sasl.jaas.config", module + `useKeyTab=true storeKey=true keyTab="` + kt + `" principal="mm2@EXAMPLE.COM";`},
			want: sarama.GSSAPIConfig{AuthType: sarama.KRB5_KEYTAB_AUTH, KeyTabPath: kt, Username: "mm2", Realm: "EXAMPLE.COM", ServiceName: "kafka", KerberosConfigPath: krb5, DisablePAFXFAST: true}},
		{name: "unset mechanism is GSSAPI; realm from default_realm; serviceName option",
			props: []string{"sasl.jaas.config", module + `useKeyTab=true keyTab="` + kt + `" principal="mm2" serviceName="kafka2" debug=true;`},
			want:  sarama.GSSAPIConfig{AuthType: sarama.KRB5_KEYTAB_AUTH, KeyTabPath: kt, Username: "mm2", Realm: "EXAMPLE.COM", ServiceName: "kafka2", KerberosConfigPath: krb5, DisablePAFXFAST: true}},
		{name: "service.name wins over the serviceName option",
			props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `password="s3cret" principal="mm2@EXAMPLE.COM" serviceName="other";`},
			want:  sarama.GSSAPIConfig{AuthType: sarama.KRB5_USER_AUTH, Password: "s3cret", Username: "mm2", Realm: "EXAMPLE.COM", ServiceName: "kafka", KerberosConfigPath: krb5, DisablePAFXFAST: true}},
		{name: "principal with an instance",
			props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useKeyTab=TRUE keyTab="` + serviceKT + `" principal="mm2/host.example.com@EXAMPLE.COM";`},
			want:  sarama.GSSAPIConfig{AuthType: sarama.KRB5_KEYTAB_AUTH, KeyTabPath: serviceKT, Username: "mm2/host.example.com", Realm: "EXAMPLE.COM", ServiceName: "kafka", KerberosConfigPath: krb5, DisablePAFXFAST: true}},

		{name: "no service name", props: []string{"sasl.mechanism", "GSSAPI", "sasl.jaas.config", module + `password="p" principal="mm2";`},
			wantErr: "source.cluster.sasl.kerberos.service.name", wantText: []string{"required for GSSAPI", "kafka/broker1"}},
		{name: "PLAIN module for GSSAPI", props: []string{"sasl.mechanism", "GSSAPI", "sasl.kerberos.service.name", "kafka", "sasl.jaas.config", jaasPlain},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"takes com.sun.security.auth.module.Krb5LoginModule"}},
		{name: "IBM's module", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", `com.ibm.security.auth.module.Krb5LoginModule required useKeytab="file:/k" credsType=both;`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"not com.ibm.security.auth.module.Krb5LoginModule"}},
		{name: "misspelt option", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useKeyTab=true keytab="` + kt + `" principal="mm2";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{`option "keytab" is not known`, "case-sensitive"}},
		{name: "keyTab without useKeyTab", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `keyTab="` + kt + `" principal="mm2";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"add useKeyTab=true"}},
		{name: "useKeyTab without keyTab", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useKeyTab=true principal="mm2";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"name the keytab file"}},
		{name: "keytab and password", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useKeyTab=true keyTab="` + kt + `" password="p" principal="mm2";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"not both"}},
		{name: "ticket cache", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useTicketCache=true principal="mm2";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"ticket cache", "not supported"}},
		{name: "no credentials", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `principal="mm2";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"needs a keytab", "password="}},
		{name: "bad boolean", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useKeyTab=yes keyTab="` + kt + `" principal="mm2";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"useKeyTab", "true or false"}},
		{name: "two realms", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `password="p" principal="mm2@A@B";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"want name@REALM"}},
		{name: "no principal", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useKeyTab=true keyTab="` + kt + `";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"needs principal"}},
		{name: "keytab without the principal's key", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useKeyTab=true keyTab="` + kt + `" principal="other@EXAMPLE.COM";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"no key of other@EXAMPLE.COM", "only of mm2@EXAMPLE.COM"}},
		{name: "missing keytab", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `useKeyTab=true keyTab="/nonexistent/k.keytab" principal="mm2";`},
			wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"/nonexistent/k.keytab", "no such file"}},
		{name: "missing krb5.conf from the key", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `password="p" principal="mm2";`},
			env: []string{"CHECKPOINTD_CHECKPOINTD_KERBEROS_KRB5_CONF=/nonexistent/krb5.conf"}, wantErr: "checkpointd.kerberos.krb5.conf", wantText: []string{"/nonexistent/krb5.conf", "krb5.conf for GSSAPI"}},
		{name: "missing krb5.conf from KRB5_CONFIG", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `password="p" principal="mm2";`},
			env: []string{"KRB5_CONFIG=/nonexistent/env.conf"}, wantErr: "KRB5_CONFIG", wantText: []string{"/nonexistent/env.conf"}},
		{name: "no realm anywhere", props: []string{"sasl.kerberos.service.name", "kafka", "sasl.jaas.config", module + `password="p" principal="mm2";`},
			env: []string{"KRB5_CONFIG=" + noRealm}, wantErr: "source.cluster.sasl.jaas.config", wantText: []string{"no default_realm", "name@REALM"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := with("source.cluster.security.protocol", "SASL_PLAINTEXT")
			for i := 0; i+1 < len(tt.props); i += 2 {
				props["source.cluster."+tt.props[i]] = tt.props[i+1]
			}
			env := tt.env
			if env == nil {
				env = []string{"KRB5_CONFIG=" + krb5}
			}
			cfg, rep, err := FromProperties(props, nil, env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				sc := mustSarama(t, cfg, SourceConsumer)
				got := sc.Net.SASL.GSSAPI
				got.BuildSpn = nil // not comparable; left nil by gssapiConfig
				if !sc.Net.SASL.Enable || sc.Net.SASL.Mechanism != sarama.SASLTypeGSSAPI || !reflect.DeepEqual(got, tt.want) || sc.Net.SASL.GSSAPI.BuildSpn != nil {
					t.Errorf("SASL %s %+v\nwant GSSAPI %+v", sc.Net.SASL.Mechanism, got, tt.want)
				}
				return
			}
			if !IsInvalid(err) {
				t.Fatalf("err = %v, want an *InvalidError", err)
			}
			if len(rep.Problems) != 1 || rep.Problems[0].Key != tt.wantErr {
				t.Fatalf("problems %v, want one for %s", rep.Problems, tt.wantErr)
			}
			text := rep.Problems[0].String()
			for _, w := range tt.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not say %q", text, w)
				}
			}
			if strings.Contains(text, `password="p"`) {
				t.Errorf("the JAAS config was printed: %s", text)
			}
		})
	}
}

const jaasPlain = `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";`

// TestKrb5Location: the key wins over KRB5_CONFIG, which wins over /etc/krb5.conf;
// the last KRB5_CONFIG in the environment counts, as in a process environment.
func TestKrb5Location(t *testing.T) {
	for _, tt := range []struct {
		key        string
		env        []string
		path, from string
	}{
		{"/k.conf", []string{"KRB5_CONFIG=/e.conf"}, "/k.conf", Krb5ConfKey},
		{"", []string{"KRB5_CONFIG=/a.conf", "HOME=/root", "KRB5_CONFIG=/b.conf"}, "/b.conf", "KRB5_CONFIG"},
		{"", []string{"KRB5_CONFIG= "}, "/etc/krb5.conf", Krb5ConfKey + " (unset: the default /etc/krb5.conf)"},
		{"", nil, "/etc/krb5.conf", Krb5ConfKey + " (unset: the default /etc/krb5.conf)"},
	} {
		if path, from := krb5Location(tt.key, tt.env); path != tt.path || from != tt.from {
			t.Errorf("krb5Location(%q, %q) = %q, %q; want %q, %q", tt.key, tt.env, path, from, tt.path, tt.from)
		}
	}
}

// FuzzGSSAPI: any Krb5LoginModule options either map onto a GSSAPI config sarama
// accepts, naming a principal and a keytab or password, or are one problem under a
// key; nothing panics.
func FuzzGSSAPI(f *testing.F) {
	krb5 := filepath.Join(f.TempDir(), "krb5.conf")
	if err := os.WriteFile(krb5, []byte(testKrb5Conf), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Add(`useKeyTab=true keyTab="/nonexistent" principal="mm2@EXAMPLE.COM"`)
	f.Add(`principal="mm2" password="p" serviceName="kafka"`)
	f.Add(`useTicketCache=true storeKey=maybe`)
	f.Add(`principal="@" password="x"`)
	f.Fuzz(func(t *testing.T, options string) {
		props := with("source.cluster.security.protocol", "SASL_PLAINTEXT", "source.cluster.sasl.mechanism", "GSSAPI",
			"source.cluster.sasl.kerberos.service.name", "kafka",
			"source.cluster.sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule required "+options+";")
		cfg, rep, err := FromProperties(props, nil, []string{"KRB5_CONFIG=" + krb5})
		if err != nil {
			if !IsInvalid(err) || len(rep.Problems) == 0 {
				t.Fatalf("err = %v, problems %v", err, rep.Problems)
			}
			return
		}
		sc, err := cfg.SaramaConfig(SourceConsumer)
		if err != nil {
			t.Fatalf("config accepted, sarama config refused: %v", err)
		}
		g := sc.Net.SASL.GSSAPI
		if g.Username == "" || g.Realm == "" || (g.AuthType == sarama.KRB5_USER_AUTH) == (g.Password == "") {
			t.Fatalf("GSSAPI %+v from %q", g, options)
		}
	})
}

// TestGSSAPIInDriverFile: an MM2 driver file's Kerberos settings (top-level for both
// clusters, a cluster's own JAAS entry winning) reach each side's clients, with
// checkpointd.kerberos.krb5.conf for both.
func TestGSSAPIInDriverFile(t *testing.T) {
	krb5 := writeFile(t, "krb5.conf", testKrb5Conf)
	kt := writeKeytab(t, "mm2", "EXAMPLE.COM")
	file := `clusters = us, eu
us.bootstrap.servers = us1:9092
eu.bootstrap.servers = eu1:9092
security.protocol = SASL_SSL
sasl.mechanism = GSSAPI
sasl.kerberos.service.name = kafka
sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="` + kt + `" principal="mm2@EXAMPLE.COM";
eu.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required principal="mm2-eu" password="p";
us->eu.enabled = true
checkpointd.kerberos.krb5.conf = ` + krb5 + "\n"
	cfg, _, err := Load(writeFile(t, "mm2.properties", file), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, tgt := mustSarama(t, cfg, SourceConsumer).Net.SASL.GSSAPI, mustSarama(t, cfg, TargetAdmin).Net.SASL.GSSAPI
	if src.AuthType != sarama.KRB5_KEYTAB_AUTH || src.KeyTabPath != kt || src.Username != "mm2" || src.KerberosConfigPath != krb5 {
		t.Errorf("source GSSAPI %+v", src)
	}
	if tgt.AuthType != sarama.KRB5_USER_AUTH || tgt.Username != "mm2-eu" || tgt.Realm != "EXAMPLE.COM" || tgt.ServiceName != "kafka" || tgt.KerberosConfigPath != krb5 {
		t.Errorf("target GSSAPI %+v", tgt)
	}
}
