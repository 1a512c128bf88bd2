package config

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"strings"
)

// tlsConfig maps Kafka's ssl.* client properties onto crypto/tls. Stores are JKS,
// PKCS12 or PEM (KIP-651: ssl.*store.type=PEM, or the inline ssl.truststore.certificates,
// ssl.keystore.certificate.chain and ssl.keystore.key), with their passwords. Without a
// truststore the system's roots are trusted, as Java trusts its own.
func tlsConfig(p props) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if err := tlsVersions(p, tc); err != nil {
		return nil, err
	}
	if err := cipherSuites(p, tc); err != nil {
		return nil, err
	}
	roots, err := truststore(p)
	if err != nil {
		return nil, err
	}
	tc.RootCAs = roots
	cert, err := keystore(p)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	alg, set := p["ssl.endpoint.identification.algorithm"]
	switch v := strings.TrimSpace(alg.value); {
	case !set || strings.EqualFold(v, "https"):
	case v == "":
		// Kafka's way to turn off host name checks. The chain is still verified.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, roots) }
	default:
		return nil, p.invalid("ssl.endpoint.identification.algorithm", "want https, or empty to skip the host name check")
	}
	return tc, nil
}

// verifyChain checks the server's certificate chain against roots, without its name.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

var tlsVersionNames = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// tlsVersions maps ssl.enabled.protocols (the versions allowed) and ssl.protocol (the
// newest one, when it names a version and the list is not given).
func tlsVersions(p props, tc *tls.Config) error {
	if p.has("ssl.protocol") {
		v := strings.TrimSpace(p["ssl.protocol"].value)
		ver, ok := tlsVersionNames[v]
		switch {
		case v == "TLS":
		case !ok:
			return p.invalid("ssl.protocol", "want TLSv1.3, TLSv1.2 or TLS")
		case !p.has("ssl.enabled.protocols"):
			tc.MaxVersion = ver
			tc.MinVersion = min(tc.MinVersion, ver)
		}
	}
	if !p.has("ssl.enabled.protocols") {
		return nil
	}
	lo, hi := uint16(0), uint16(0)
	for _, name := range parseList(p["ssl.enabled.protocols"].value) {
		ver, ok := tlsVersionNames[name]
		if !ok {
			return p.invalid("ssl.enabled.protocols", "%q is not a TLS version: want TLSv1.2, TLSv1.3 (TLSv1 and TLSv1.1 work too)", name)
		}
		if lo == 0 || ver < lo {
			lo = ver
		}
		hi = max(hi, ver)
	}
	if lo == 0 {
		return p.invalid("ssl.enabled.protocols", "want at least one TLS version")
	}
	tc.MinVersion, tc.MaxVersion = lo, hi
	return nil
}

// cipherSuites maps ssl.cipher.suites, by their IANA names as Java uses them. TLS 1.3
// suites are accepted; Go always offers all three.
func cipherSuites(p props, tc *tls.Config) error {
	if !p.has("ssl.cipher.suites") {
		return nil
	}
	byName := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[s.Name] = s.ID
	}
	for _, name := range parseList(p["ssl.cipher.suites"].value) {
		switch id, ok := byName[name]; {
		case ok && id >= 0x1301 && id <= 0x1303:
		case ok:
			tc.CipherSuites = append(tc.CipherSuites, id)
		default:
			return p.invalid("ssl.cipher.suites", "%q is not a cipher suite Go knows (use IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", name)
		}
	}
	return nil
}

// storeType reads ssl.truststore.type or ssl.keystore.type: JKS (Java's and Kafka's
// default), PKCS12 or PEM; empty when not given.
func storeType(p props, name string) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(p[name].value))
	switch t {
	case "", "PEM", "JKS", "PKCS12":
		return t, nil
	default:
		return "", p.invalid(name, "want JKS, PKCS12 or PEM")
	}
}

// truststore reads the trusted CAs from ssl.truststore.certificates (PEM) or the store
// at ssl.truststore.location: PEM, JKS or PKCS12, told apart by content as Java's
// dual-format key stores do; PEM only when ssl.truststore.type says PEM.
func truststore(p props) (*x509.CertPool, error) {
	typ, err := storeType(p, "ssl.truststore.type")
	if err != nil {
		return nil, err
	}
	if typ == "PEM" && p.has("ssl.truststore.password") {
		return nil, p.invalid("ssl.truststore.password", "a PEM truststore takes no password (Kafka rejects one too)")
	}
	if p.has("ssl.truststore.certificates") {
		if typ != "" && typ != "PEM" {
			return nil, &clientError{key: p["ssl.truststore.certificates"].key, msg: "inline certificates are PEM: set ssl.truststore.type=PEM"}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(p["ssl.truststore.certificates"].value)) {
			return nil, p.invalid("ssl.truststore.certificates", "no PEM certificate in it")
		}
		return pool, nil
	}
	if !p.has("ssl.truststore.location") {
		return nil, nil // the system's roots
	}
	data, format, err := readStore(p, "ssl.truststore.location", typ)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	password := p["ssl.truststore.password"].value
	switch format {
	case "PEM":
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, p.invalid("ssl.truststore.location", "no PEM certificate in it")
		}
		return pool, nil
	case "JKS":
		certs, err = jksTrusted(data, password)
	case "PKCS12":
		certs, err = pkcs12Trusted(data, password)
	}
	if err != nil {
		return nil, storeError(p, "ssl.truststore.location", "ssl.truststore.password", format, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// keystore reads the client certificate and key from ssl.keystore.certificate.chain and
// ssl.keystore.key (PEM) or the store at ssl.keystore.location: PEM, JKS or PKCS12.
func keystore(p props) (*tls.Certificate, error) {
	typ, err := storeType(p, "ssl.keystore.type")
	if err != nil {
		return nil, err
	}
	if typ == "PEM" && p.has("ssl.keystore.password") {
		return nil, p.invalid("ssl.keystore.password", "a PEM keystore takes no store password; only ssl.key.password, for an encrypted key (Kafka rejects one too)")
	}
	if p.has("ssl.keystore.certificate.chain") || p.has("ssl.keystore.key") {
		if given, missing := "ssl.keystore.key", "ssl.keystore.certificate.chain"; !p.has(given) || !p.has(missing) {
			if !p.has(given) {
				given, missing = missing, given
			}
			return nil, p.invalid(given, "%s and %s go together", given, missing)
		}
		if typ != "" && typ != "PEM" {
			return nil, &clientError{key: p["ssl.keystore.key"].key, msg: "an inline key and certificate chain are PEM: set ssl.keystore.type=PEM"}
		}
		return pemKeyPair(p, []byte(p["ssl.keystore.certificate.chain"].value), []byte(p["ssl.keystore.key"].value), "ssl.keystore.key")
	}
	if !p.has("ssl.keystore.location") {
		return nil, nil
	}
	data, format, err := readStore(p, "ssl.keystore.location", typ)
	if err != nil {
		return nil, err
	}
	if format == "PEM" {
		return pemKeyPair(p, data, data, "ssl.keystore.location") // a PEM keystore file holds the key and its chain
	}
	if !p.has("ssl.keystore.password") {
		return nil, p.invalid("ssl.keystore.location", "a %s keystore needs ssl.keystore.password (Kafka requires it too)", format)
	}
	storePass := p["ssl.keystore.password"].value
	keyPass := cmp.Or(p["ssl.key.password"].value, storePass) // Kafka's default: the store's password
	var cert *tls.Certificate
	if format == "JKS" {
		cert, err = jksKeyPair(data, storePass, keyPass)
	} else {
		cert, err = pkcs12KeyPair(data, storePass)
	}
	if err != nil {
		return nil, storeError(p, "ssl.keystore.location", "ssl.keystore.password", format, err)
	}
	return cert, nil
}

func pemKeyPair(p props, certs, key []byte, from string) (*tls.Certificate, error) {
	if encryptedKey(key) {
		return nil, p.invalid(from, "the private key is encrypted, which checkpointd cannot read in PEM: decrypt it with `openssl pkcs8 -in key.pem -out plain.pem` and protect the file instead, or use a PKCS12 or JKS keystore")
	}
	cert, err := tls.X509KeyPair(certs, key)
	if err != nil {
		return nil, p.invalid(from, "not a usable PEM certificate chain and private key: %v", err)
	}
	return &cert, nil
}

// readStore reads the store at the location key and tells its format from its content.
// A store whose type says PEM must be PEM; one whose type says JKS or PKCS12 may be
// either (Java reads both whatever the type), but not PEM, which Kafka reads only with
// type PEM; with no type any of the three is read.
func readStore(p props, name, typ string) ([]byte, string, error) {
	path := strings.TrimSpace(p[name].value)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", p.invalid(name, "cannot read it: %v", errors.Unwrap(err))
	}
	format := storeFormat(data)
	typeKey := strings.Replace(p[name].key, ".location", ".type", 1)
	switch {
	case format == "":
		return nil, "", p.invalid(name, "neither a JKS, a PKCS12 nor a PEM store")
	case typ == "PEM" && format != "PEM":
		return nil, "", p.invalid(name, "a %s store, but %s is PEM: set it to %s", format, typeKey, format)
	case (typ == "JKS" || typ == "PKCS12") && format == "PEM":
		return nil, "", p.invalid(name, "a PEM file, but %s is %s: set it to PEM", typeKey, typ)
	}
	return data, format, nil
}

// storeError names the setting most likely at fault when a store cannot be opened.
func storeError(p props, location, password, format string, err error) error {
	sibling := func(name string) string { return strings.Replace(p[location].key, location, name, 1) }
	switch {
	case errors.Is(err, errStorePassword) && !p.has(password):
		return p.invalid(location, "the %s store is protected by a password: set %s", format, sibling(password))
	case errors.Is(err, errStorePassword):
		return p.invalid(password, "does not open the %s store %s (%v)", format, strings.TrimSpace(p[location].value), err)
	case errors.Is(err, errKeyPassword) && !p.has("ssl.key.password"):
		return p.invalid(location, "%s does not decrypt the private key in it: set %s", sibling(password), sibling("ssl.key.password"))
	case errors.Is(err, errKeyPassword):
		return p.invalid("ssl.key.password", "does not decrypt the private key in %s", strings.TrimSpace(p[location].value))
	}
	return p.invalid(location, "cannot use the %s store: %v", format, err)
}

func encryptedKey(data []byte) bool {
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] == "4,ENCRYPTED" {
			return true
		}
	}
	return false
}
