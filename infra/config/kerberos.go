package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"
	krb5config "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// Kerberos (SASL GSSAPI) as Kafka's Java client runs it, with a keytab:
//
//	sasl.mechanism=GSSAPI
//	sasl.kerberos.service.name=kafka
//	sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \
//	    useKeyTab=true storeKey=true keyTab="/etc/security/keytabs/mm2.keytab" principal="mm2@EXAMPLE.COM";
//
// or with a password, a checkpointd option Java's module does not have (Java asks a
// callback handler for it):
//
//	sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required principal="mm2@EXAMPLE.COM" password="...";
//
// The realms and KDCs come from a krb5.conf: checkpointd.kerberos.krb5.conf, else the
// KRB5_CONFIG environment variable (one file), else /etc/krb5.conf. sarama logs in
// with the keytab or password for every new broker connection, so there is no ticket
// cache to renew and the sasl.kerberos.ticket.renew.* settings have nothing to do.
const (
	krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"
	// Krb5ConfKey is checkpointd's key for the krb5.conf of both clusters.
	Krb5ConfKey     = "checkpointd.kerberos.krb5.conf"
	krb5ConfEnv     = "KRB5_CONFIG"
	defaultKrb5Conf = "/etc/krb5.conf"
	// krb5Prop carries the krb5.conf location into a client's props; its key names
	// where the location came from.
	krb5Prop = "\x00krb5.conf"
)

// krb5Options are the Krb5LoginModule options checkpointd reads.
var krb5Options = []string{"useKeyTab", "keyTab", "principal", "storeKey", "doNotPrompt", "password", "serviceName", "useTicketCache", "ticketCache"}

// krb5IgnoredOptions are Krb5LoginModule options that change nothing for a client
// that logs in with a keytab or password for every connection.
var krb5IgnoredOptions = []string{"debug", "refreshKrb5Config", "renewTGT", "isInitiator", "clearPass", "tryFirstPass", "useFirstPass", "storePass"}

// krb5Location says which krb5.conf a configuration uses and the setting it came from.
func krb5Location(key string, env []string) (path, from string) {
	if key != "" {
		return key, Krb5ConfKey
	}
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, krb5ConfEnv+"="); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), krb5ConfEnv
		}
	}
	return defaultKrb5Conf, Krb5ConfKey + " (unset: the default " + defaultKrb5Conf + ")"
}

// gssapiConfig maps a Krb5LoginModule entry onto sarama's GSSAPI settings. It reads
// the krb5.conf and the keytab now, so that a wrong path or a keytab without the
// principal's key is reported at start-up under the key that named it.
func gssapiConfig(sc *sarama.Config, p props, e jaasEntry) error {
	if e.module != krb5LoginModule {
		return p.invalid("sasl.jaas.config", "GSSAPI (Kerberos) takes %s, not %s", krb5LoginModule, e.module)
	}
	for name := range e.options {
		if !slices.Contains(krb5Options, name) && !slices.Contains(krb5IgnoredOptions, name) {
			return p.invalid("sasl.jaas.config", "Krb5LoginModule option %q is not known (options are case-sensitive): want %s", name, strings.Join(krb5Options, ", "))
		}
	}
	flags := map[string]bool{}
	for _, name := range []string{"useKeyTab", "storeKey", "doNotPrompt", "useTicketCache"} {
		switch v := strings.ToLower(strings.TrimSpace(e.options[name])); v {
		case "", "false":
		case "true":
			flags[name] = true
		default:
			return p.invalid("sasl.jaas.config", "Krb5LoginModule option %s=%q: want true or false", name, e.options[name])
		}
	}
	keyTab, password := strings.TrimSpace(e.options["keyTab"]), e.options["password"]
	switch {
	case flags["useKeyTab"] && password != "":
		return p.invalid("sasl.jaas.config", "Krb5LoginModule takes a keytab (useKeyTab=true) or a password, not both")
	case flags["useKeyTab"] && keyTab == "":
		// Java would look for the default keytab; checkpointd wants it named.
		return p.invalid("sasl.jaas.config", `useKeyTab=true without keyTab="...": name the keytab file`)
	case !flags["useKeyTab"] && keyTab != "":
		return p.invalid("sasl.jaas.config", `keyTab is given but useKeyTab is not true: add useKeyTab=true`)
	case !flags["useKeyTab"] && password == "":
		if flags["useTicketCache"] {
			return p.invalid("sasl.jaas.config", `a ticket cache (useTicketCache=true) is not supported: give checkpointd its own keytab (useKeyTab=true keyTab="..." principal="...")`)
		}
		return p.invalid("sasl.jaas.config", `Krb5LoginModule needs a keytab (useKeyTab=true keyTab="..." principal="...") or, a checkpointd option, password="..." with principal="..."`)
	}

	service := cmp.Or(strings.TrimSpace(p["sasl.kerberos.service.name"].value), strings.TrimSpace(e.options["serviceName"]))
	if service == "" {
		return &clientError{key: strings.Replace(p["sasl.jaas.config"].key, "sasl.jaas.config", "sasl.kerberos.service.name", 1),
			msg: "required for GSSAPI: the service name in the brokers' Kerberos principals (kafka in kafka/broker1.example.com@EXAMPLE.COM)"}
	}

	path, from := p[krb5Prop].value, p[krb5Prop].key
	kc, err := krb5config.Load(path)
	if err != nil {
		return &clientError{key: from, value: path, msg: fmt.Sprintf("the krb5.conf for GSSAPI: %v", err)}
	}
	principal := strings.TrimSpace(e.options["principal"])
	if principal == "" || principal == "*" {
		return p.invalid("sasl.jaas.config", `Krb5LoginModule needs principal="name@REALM": the client principal checkpointd logs in as`)
	}
	user, realm, hasRealm := strings.Cut(principal, "@")
	if !hasRealm {
		realm = kc.LibDefaults.DefaultRealm
		if realm == "" {
			return p.invalid("sasl.jaas.config", "principal %q names no realm and the krb5.conf (%s) has no default_realm: write name@REALM", principal, path)
		}
	}
	if user == "" || realm == "" || strings.Contains(realm, "@") {
		return p.invalid("sasl.jaas.config", "principal %q: want name@REALM", principal)
	}

	g := &sc.Net.SASL.GSSAPI
	g.ServiceName, g.KerberosConfigPath, g.Username, g.Realm = service, path, user, realm
	// As Java's client: no PA-FX-FAST padata, which Active Directory and older MIT
	// KDCs refuse.
	g.DisablePAFXFAST = true
	if flags["useKeyTab"] {
		if err := checkKeytab(keyTab, user, realm); err != nil {
			return p.invalid("sasl.jaas.config", "keyTab %s: %v", keyTab, err)
		}
		g.AuthType, g.KeyTabPath = sarama.KRB5_KEYTAB_AUTH, keyTab
	} else {
		g.AuthType, g.Password = sarama.KRB5_USER_AUTH, password
	}
	sc.Net.SASL.Mechanism = sarama.SASLTypeGSSAPI
	return nil
}

// checkKeytab reads a keytab and checks that it holds a key of the principal.
func checkKeytab(path, user, realm string) error {
	kt, err := keytab.Load(path)
	if err != nil {
		return err
	}
	var held []string
	for _, e := range kt.Entries {
		name := e.Principal.String()
		if strings.Join(e.Principal.Components, "/") == user && e.Principal.Realm == realm {
			return nil
		}
		if !slices.Contains(held, name) {
			held = append(held, name)
		}
	}
	if len(held) == 0 {
		return fmt.Errorf("it holds no keys")
	}
	return fmt.Errorf("it holds no key of %s@%s, only of %s", user, realm, strings.Join(held, ", "))
}
