package config

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Errors that name the password at fault when a store cannot be opened.
var (
	errStorePassword = errors.New("wrong or missing store password")
	errKeyPassword   = errors.New("wrong key password")
)

// jksMagic starts every JKS store (JCEKS, 0xCECECECE, is not read).
var jksMagic = []byte{0xFE, 0xED, 0xFE, 0xED}

// storeFormat tells a key or trust store's format from its content: JKS, PKCS12 (a DER
// SEQUENCE), PEM, or "" for none of them.
func storeFormat(data []byte) string {
	switch {
	case bytes.HasPrefix(data, jksMagic):
		return "JKS"
	case len(data) > 1 && data[0] == 0x30:
		return "PKCS12"
	}
	if block, _ := pem.Decode(data); block != nil {
		return "PEM"
	}
	return ""
}

// loadJKS reads a JKS store. Without a password the entries are read with no integrity
// check, as Java reads a truststore without ssl.truststore.password.
func loadJKS(data []byte, password string) (jks.KeyStore, error) {
	ks := jks.New()
	if err := checkJKSLengths(data); err != nil {
		return ks, fmt.Errorf("not a readable JKS store: %w", err)
	}
	err := ks.Load(bytes.NewReader(data), []byte(password))
	switch {
	case err == nil:
		return ks, nil
	case strings.Contains(err.Error(), "invalid digest") && password == "":
		// keystore-go reads every entry before it checks the digest.
		return ks, nil
	case strings.Contains(err.Error(), "invalid digest"):
		return ks, fmt.Errorf("%w: the integrity check failed", errStorePassword)
	}
	return ks, fmt.Errorf("not a readable JKS store: %w", err)
}

// jksTrusted returns the trusted certificate entries of a JKS truststore.
func jksTrusted(data []byte, password string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(data, password)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, alias := range ks.Aliases() {
		entry, err := ks.GetTrustedCertificateEntry(alias)
		if err != nil {
			continue // a key entry: Java's trust manager does not trust it either
		}
		c, err := x509.ParseCertificate(entry.Certificate.Content)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("it holds no trusted certificate entry (import the CA with keytool -importcert)")
	}
	return out, nil
}

// jksKeyPair returns the first private key entry of a JKS keystore, by alias, with its
// certificate chain.
func jksKeyPair(data []byte, storePass, keyPass string) (*tls.Certificate, error) {
	ks, err := loadJKS(data, storePass)
	if err != nil {
		return nil, err
	}
	aliases := ks.Aliases()
	slices.Sort(aliases)
	for _, alias := range aliases {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		entry, err := ks.GetPrivateKeyEntry(alias, []byte(keyPass))
		if err != nil {
			return nil, fmt.Errorf("%w (entry %q)", errKeyPassword, alias)
		}
		key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("entry %q: private key: %w", alias, err)
		}
		chain := make([][]byte, 0, len(entry.CertificateChain))
		for _, c := range entry.CertificateChain {
			chain = append(chain, c.Content)
		}
		return keyPair(key, chain)
	}
	return nil, errors.New("it holds no private key entry")
}

// pkcs12Trusted returns the certificates of a PKCS12 truststore. A store without the
// Java trust attribute (one made by openssl) is read as a chain, all certificates trusted.
func pkcs12Trusted(data []byte, password string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err == nil {
		return certs, nil
	}
	if isPKCS12PasswordError(err) {
		return nil, fmt.Errorf("%w: %v", errStorePassword, err)
	}
	if _, cert, cas, chainErr := pkcs12.DecodeChain(data, password); chainErr == nil {
		return append([]*x509.Certificate{cert}, cas...), nil
	}
	return nil, fmt.Errorf("not a readable PKCS12 truststore: %w", err)
}

// pkcs12KeyPair returns the key and certificate chain of a PKCS12 keystore, which holds
// one key under one password (keytool refuses a different key password for PKCS12).
func pkcs12KeyPair(data []byte, password string) (*tls.Certificate, error) {
	key, cert, cas, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		if isPKCS12PasswordError(err) {
			return nil, fmt.Errorf("%w: %v", errStorePassword, err)
		}
		return nil, fmt.Errorf("not a readable PKCS12 keystore with one key: %w", err)
	}
	return keyPair(key, leafFirst(key, append([]*x509.Certificate{cert}, cas...)))
}

// leafFirst orders a PKCS12 store's certificates with the key's own first: a store
// that also holds trusted CAs (keytool -importcert into a keystore) may list them
// before it.
func leafFirst(key any, certs []*x509.Certificate) [][]byte {
	var chain [][]byte
	signer, _ := key.(crypto.Signer)
	for _, c := range certs {
		pub, ok := c.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
		if ok && signer != nil && pub.Equal(signer.Public()) {
			chain = append([][]byte{c.Raw}, chain...)
		} else {
			chain = append(chain, c.Raw)
		}
	}
	return chain
}

func isPKCS12PasswordError(err error) bool {
	return errors.Is(err, pkcs12.ErrIncorrectPassword) || errors.Is(err, pkcs12.ErrDecryption)
}

// keyPair makes a TLS certificate of a key and its chain (leaf first), checking that
// they belong together.
func keyPair(key any, chain [][]byte) (*tls.Certificate, error) {
	if len(chain) == 0 {
		return nil, errors.New("the private key has no certificate")
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(leaf.PublicKey) {
		return nil, errors.New("the private key does not match its certificate")
	}
	return &tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}, nil
}

// checkJKSLengths walks a JKS store's layout and checks that every length it declares
// fits in the data, so that a corrupt store cannot make the decoder allocate gigabytes:
// magic, version (1 or 2), entry count, then per entry a tag, an alias, a timestamp and
// a private key with its certificate chain (tag 1) or one trusted certificate (tag 2),
// certificates typed in version 2; a 20-byte digest ends the store.
func checkJKSLengths(data []byte) error {
	r := &lengthReader{data: data}
	if !bytes.Equal(r.next(4), jksMagic) {
		return errors.New("no JKS magic number")
	}
	version := r.uint32()
	if version != 1 && version != 2 {
		return fmt.Errorf("unknown JKS version %d", version)
	}
	cert := func() {
		if version == 2 {
			r.next(int(r.uint16())) // the certificate type
		}
		r.next(int(r.uint32()))
	}
	for n := r.uint32(); n > 0 && r.err == nil; n-- {
		tag := r.uint32()
		r.next(int(r.uint16())) // alias
		r.next(8)               // creation time
		switch tag {
		case 1:
			r.next(int(r.uint32())) // the protected key
			for c := r.uint32(); c > 0 && r.err == nil; c-- {
				cert()
			}
		case 2:
			cert()
		default:
			return fmt.Errorf("unknown JKS entry tag %d", tag)
		}
	}
	r.next(20)
	if r.err != nil {
		return r.err
	}
	if len(r.data) != 0 {
		return errors.New("data after the JKS digest")
	}
	return nil
}

// lengthReader reads big-endian fields, remembering the first overrun.
type lengthReader struct {
	data []byte
	err  error
}

func (r *lengthReader) next(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.data) {
		r.err = errors.New("truncated, or a length runs past its end")
		return nil
	}
	b := r.data[:n]
	r.data = r.data[n:]
	return b
}

func (r *lengthReader) uint16() uint16 {
	b := r.next(2)
	if b == nil {
		return 0
	}
	return uint16(b[0])<<8 | uint16(b[1])
}

func (r *lengthReader) uint32() uint32 {
	b := r.next(4)
	if b == nil {
		return 0
	}
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
