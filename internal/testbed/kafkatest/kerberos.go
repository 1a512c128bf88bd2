package kafkatest

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// KerbyVersion is the Apache Kerby release whose KDC the Kerberos tests run; the
// pom in runtime/kerby pins it too.
const KerbyVersion = "2.1.0"

var (
	//go:embed runtime/kerby/pom.xml
	kerbyPOM []byte
	//go:embed runtime/kerby/TestKdc.java
	testKdcJava []byte
)

// KerbyJars returns the directory holding Apache Kerby's KDC jars, fetching them
// with Maven on first use, beside the Kafka jars.
func KerbyJars(ctx context.Context) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return fetchJars(ctx, filepath.Join(cache, "kerby-"+KerbyVersion), cache, kerbyPOM,
		"Apache Kerby "+KerbyVersion, "kerb-simplekdc-"+KerbyVersion+".jar")
}

// Realm is the Kerberos realm of the test KDC.
const Realm = "CHECKPOINTD.TEST"

// KDC is a Kerberos KDC of Realm on loopback (Apache Kerby's SimpleKdcServer, run by
// runtime/kerby/TestKdc.java) with its principals and keytabs:
//
//   - kafka/localhost, the brokers' (BrokerKeytab);
//   - checkpointd-keytab, a client logging in with ClientKeytab;
//   - checkpointd-password, a client logging in with Password;
//   - checkpointd-stale, whose StaleKeytab holds a key the KDC replaced since;
//   - checkpointd-expired, with Password, whose principal expired an hour ago.
//
// The KDC does not require pre-authentication (gokrb5 cannot pre-authenticate a
// password against Kerby: see TestKdc.java). SkewedKrb5Conf points at a second KDC
// of the realm that allows no clock skew at all, knowing checkpointd-keytab (with
// the key in SkewedKeytab) and the broker's principal: it refuses every service
// ticket request with KRB_AP_ERR_SKEW. RekeyedKrb5Conf points at a third KDC of the
// realm whose key of the broker's principal the broker does not have, knowing
// checkpointd-keytab with the key in RekeyedKeytab. UnreachableKrb5Conf names a KDC
// port nothing listens on.
type KDC struct {
	Addr                                          string // host:port of the KDC (TCP)
	Krb5Conf, SkewedKrb5Conf, UnreachableKrb5Conf string
	RekeyedKrb5Conf                               string
	BrokerKeytab, ClientKeytab, StaleKeytab       string
	SkewedKeytab, RekeyedKeytab                   string
	Password                                      string // of checkpointd-password and checkpointd-expired
	ReadyIn                                       time.Duration

	proc *javaProc
}

// The principals of the KDC, without the realm.
const (
	BrokerPrincipal   = "kafka/localhost"
	KeytabPrincipal   = "checkpointd-keytab"
	PasswordPrincipal = "checkpointd-password"
	StalePrincipal    = "checkpointd-stale"
	ExpiredPrincipal  = "checkpointd-expired"
)

// startKDC starts the KDCs in dir and waits until they serve.
func startKDC(ctx context.Context, dir string) (*KDC, error) {
	lib, err := KerbyJars(ctx)
	if err != nil {
		return nil, fmt.Errorf("start KDC: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start KDC: %w", err)
	}
	src := filepath.Join(dir, "TestKdc.java")
	if err := os.WriteFile(src, testKdcJava, 0o644); err != nil {
		return nil, fmt.Errorf("start KDC: %w", err)
	}
	start := time.Now()
	var last error
	for range 3 { // another process may take a picked port before the KDC binds it
		k, err := tryStartKDC(ctx, lib, dir, src)
		if err == nil {
			k.ReadyIn = time.Since(start)
			return k, nil
		}
		last = err
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, fmt.Errorf("start KDC: %w", last)
}

func tryStartKDC(ctx context.Context, lib, dir, src string) (*KDC, error) {
	ports, err := freePorts(4) // the KDC, the skewed and the rekeyed one, and one left unused
	if err != nil {
		return nil, err
	}
	k := &KDC{
		Addr:         "127.0.0.1:" + strconv.Itoa(ports[0]),
		Password:     randomSecret(),
		BrokerKeytab: filepath.Join(dir, "broker.keytab"), ClientKeytab: filepath.Join(dir, "client.keytab"),
		StaleKeytab: filepath.Join(dir, "stale.keytab"), SkewedKeytab: filepath.Join(dir, "skewed.keytab"),
		Krb5Conf: filepath.Join(dir, "krb5.conf"), SkewedKrb5Conf: filepath.Join(dir, "krb5-skewed.conf"),
		RekeyedKrb5Conf: filepath.Join(dir, "krb5-rekeyed.conf"), RekeyedKeytab: filepath.Join(dir, "rekeyed.keytab"),
		UnreachableKrb5Conf: filepath.Join(dir, "krb5-unreachable.conf"),
	}
	for i, f := range []string{k.Krb5Conf, k.SkewedKrb5Conf, k.RekeyedKrb5Conf, k.UnreachableKrb5Conf} {
		if err := os.WriteFile(f, []byte(krb5Conf("127.0.0.1:"+strconv.Itoa(ports[i]))), 0o644); err != nil {
			return nil, err
		}
	}
	// Source-file mode compiles TestKdc.java in memory: no build step, about a second.
	flags := []string{"-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true"}
	k.proc, err = startJava("kdc", lib, dir, "", flags, src,
		dir, Realm, strconv.Itoa(ports[0]), strconv.Itoa(ports[1]), strconv.Itoa(ports[2]), PasswordPrincipal, k.Password)
	if err != nil {
		return nil, err
	}
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, _ := os.ReadFile(k.proc.outPath); strings.Contains(string(data), "READY") {
			return k, nil
		}
		if k.proc.exited() {
			return nil, fmt.Errorf("KDC exited: %v\n%s", k.proc.waitErr, k.proc.tail(30))
		}
		select {
		case <-ctx.Done():
			_ = k.close()
			return nil, ctx.Err()
		case <-deadline.C:
			_ = k.close()
			return nil, errors.New("KDC not ready in 60s\n" + k.proc.tail(30))
		case <-tick.C:
		}
	}
}

// krb5Conf is a krb5.conf for Realm with the KDC at addr, over TCP, with the AES
// types the KDC issues.
func krb5Conf(addr string) string {
	const enctypes = "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96"
	return "[libdefaults]\n" +
		" default_realm = " + Realm + "\n" +
		" udp_preference_limit = 1\n" +
		" dns_lookup_kdc = false\n" +
		" dns_lookup_realm = false\n" +
		" default_tkt_enctypes = " + enctypes + "\n" +
		" default_tgs_enctypes = " + enctypes + "\n" +
		" permitted_enctypes = " + enctypes + "\n" +
		"[realms]\n " + Realm + " = {\n  kdc = " + addr + "\n }\n" +
		"[domain_realm]\n localhost = " + Realm + "\n"
}

func (k *KDC) close() error {
	if k == nil || k.proc == nil {
		return nil
	}
	return k.proc.kill()
}

// brokerProps are the broker settings of a SASL_PLAINTEXT listener named KERBEROS,
// taking GSSAPI only, with the broker's keytab.
func (k *KDC) brokerProps() map[string]string {
	return map[string]string{
		"listener.name.kerberos.sasl.enabled.mechanisms": "GSSAPI",
		"listener.name.kerberos.gssapi.sasl.jaas.config": fmt.Sprintf(
			`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="%s@%s";`,
			k.BrokerKeytab, BrokerPrincipal, Realm),
		"sasl.kerberos.service.name": "kafka",
	}
}

// jvmFlags point the broker's JVM at the KDC.
func (k *KDC) jvmFlags() []string {
	return []string{"-Djava.security.krb5.conf=" + k.Krb5Conf}
}
