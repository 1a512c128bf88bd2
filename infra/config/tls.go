package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"strings"
)

// tlsConfig maps Kafka's ssl.* client properties onto crypto/tls. Stores are read as PEM
// only, the format Kafka has accepted since KIP-651 (ssl.truststore.type=PEM,
// ssl.keystore.type=PEM, or the inline ssl.truststore.certificates,
// ssl.keystore.certificate.chain and ssl.keystore.key); JKS and PKCS12 stores are
// refused with the commands that convert them. Without a truststore the system's roots
// are trusted, as Java trusts its own.
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

const convertHint = "checkpointd reads PEM only: convert a JKS or PKCS12 store with " +
	"`keytool -importkeystore -srckeystore STORE -destkeystore store.p12 -deststoretype PKCS12` and " +
	"`openssl pkcs12 -in store.p12 -nodes -out store.pem`, then set ssl.truststore.type=PEM / ssl.keystore.type=PEM"

// storeType reads ssl.truststore.type or ssl.keystore.type. Java's default is JKS; a
// store with no type given is accepted when it holds PEM.
func storeType(p props, name string) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(p[name].value))
	switch t {
	case "", "PEM":
		return t, nil
	case "JKS", "PKCS12":
		return "", p.invalid(name, "%s", convertHint)
	default:
		return "", p.invalid(name, "want PEM")
	}
}

func truststore(p props) (*x509.CertPool, error) {
	typ, err := storeType(p, "ssl.truststore.type")
	if err != nil {
		return nil, err
	}
	if typ == "PEM" && p.has("ssl.truststore.password") {
		return nil, p.invalid("ssl.truststore.password", "a PEM truststore takes no password (Kafka rejects one too)")
	}
	var data []byte
	var from string
	switch {
	case p.has("ssl.truststore.certificates"):
		data, from = []byte(p["ssl.truststore.certificates"].value), "ssl.truststore.certificates"
	case p.has("ssl.truststore.location"):
		from = "ssl.truststore.location"
		if data, err = readPEMFile(p, from); err != nil {
			return nil, err
		}
	default:
		return nil, nil // the system's roots
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, p.invalid(from, "no PEM certificate in it; %s", convertHint)
	}
	return pool, nil
}

func keystore(p props) (*tls.Certificate, error) {
	typ, err := storeType(p, "ssl.keystore.type")
	if err != nil {
		return nil, err
	}
	if typ == "PEM" && p.has("ssl.keystore.password") {
		return nil, p.invalid("ssl.keystore.password", "a PEM keystore takes no store password; only ssl.key.password, for an encrypted key (Kafka rejects one too)")
	}
	var certs, key []byte
	var from string
	switch {
	case p.has("ssl.keystore.certificate.chain") || p.has("ssl.keystore.key"):
		if given, missing := "ssl.keystore.key", "ssl.keystore.certificate.chain"; !p.has(given) || !p.has(missing) {
			if !p.has(given) {
				given, missing = missing, given
			}
			return nil, p.invalid(given, "%s and %s go together", given, missing)
		}
		certs, key, from = []byte(p["ssl.keystore.certificate.chain"].value), []byte(p["ssl.keystore.key"].value), "ssl.keystore.key"
	case p.has("ssl.keystore.location"):
		from = "ssl.keystore.location"
		if certs, err = readPEMFile(p, from); err != nil {
			return nil, err
		}
		key = certs // a PEM keystore file holds the key and its certificates
	default:
		return nil, nil
	}
	if encryptedKey(key) {
		return nil, p.invalid(from, "the private key is encrypted, which checkpointd cannot read: decrypt it with `openssl pkcs8 -in key.pem -out plain.pem` and protect the file instead")
	}
	cert, err := tls.X509KeyPair(certs, key)
	if err != nil {
		return nil, p.invalid(from, "not a usable PEM certificate chain and private key: %v", err)
	}
	return &cert, nil
}

func readPEMFile(p props, name string) ([]byte, error) {
	path := strings.TrimSpace(p[name].value)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, p.invalid(name, "cannot read it: %v", errors.Unwrap(err))
	}
	if block, _ := pem.Decode(data); block == nil {
		return nil, p.invalid(name, "not a PEM file; %s", convertHint)
	}
	return data, nil
}

func encryptedKey(data []byte) bool {
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] == "4,ENCRYPTED" {
			return true
		}
	}
	return false
}
