// Package kafkaerr tells which layer a Kafka client error comes from — the network,
// TLS, a Kerberos KDC, the SASL mechanism, the SASL credentials or the broker's
// authorizer — and
// which client settings to check, so that a TLS verification failure is not reported
// as a SASL problem or a missing ACL as bad credentials.
package kafkaerr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/IBM/sarama"
)

// Layer is where a client error comes from.
type Layer int

const (
	Unknown       Layer = iota
	Network             // nothing listens, unreachable, or the connection was closed
	TLS                 // the handshake or the verification of either side's certificate
	SASLMechanism       // the listener does not speak SASL, or not this mechanism
	Credentials         // the broker refused the username and password
	Authorization       // authenticated, but an ACL denies the operation
	Kerberos            // the Kerberos login before the broker: see KerberosStepOf
)

func (l Layer) String() string {
	switch l {
	case Network:
		return "network"
	case TLS:
		return "TLS"
	case SASLMechanism:
		return "SASL mechanism"
	case Credentials:
		return "SASL credentials"
	case Authorization:
		return "authorization"
	case Kerberos:
		return "Kerberos"
	}
	return "unknown"
}

// LayerOf classifies err. TLS is checked before SASL: a SASL client on a TLS listener
// whose certificate is not trusted fails in the TLS handshake, before any SASL byte.
func LayerOf(err error) Layer {
	switch {
	case err == nil:
		return Unknown
	case KerberosStepOf(err) != NotKerberos:
		// Before TLS: gokrb5's errors are text, and may quote a KDC's.
		return Kerberos
	case isTLS(err):
		return TLS
	case errors.Is(err, sarama.ErrSASLAuthenticationFailed), credentialsRefused(err):
		return Credentials
	case errors.Is(err, sarama.ErrUnsupportedSASLMechanism), errors.Is(err, sarama.ErrIllegalSASLState):
		return SASLMechanism
	case isAuthorization(err):
		return Authorization
	case isNetwork(err):
		return Network
	}
	return Unknown
}

func isTLS(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		opErr    *net.OpError
	)
	return errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &unknown) ||
		errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &opErr) && opErr.Op == "remote error" || // a TLS alert from the broker
		strings.HasPrefix(err.Error(), "tls: ") || strings.Contains(err.Error(), ": tls: ")
}

// credentialsRefused reports an error that says, by a CredentialsRejected method,
// that the credentials were refused before any broker saw them (an OAuth token
// endpoint refusing the client id and secret).
func credentialsRefused(err error) bool {
	var c interface{ CredentialsRejected() bool }
	return errors.As(err, &c) && c.CredentialsRejected()
}

func isAuthorization(err error) bool {
	for _, k := range []sarama.KError{
		sarama.ErrTopicAuthorizationFailed, sarama.ErrGroupAuthorizationFailed,
		sarama.ErrClusterAuthorizationFailed, sarama.ErrTransactionalIDAuthorizationFailed,
		sarama.ErrDelegationTokenAuthorizationFailed,
	} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

func isNetwork(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Hint says what to check for err, for a client configured as cfg (nil if unknown),
// naming the layer and the Kafka client settings; "" when there is nothing to add.
func Hint(err error, cfg *sarama.Config) string {
	tlsOn, saslOn, mech := false, false, ""
	if cfg != nil {
		tlsOn, saslOn, mech = cfg.Net.TLS.Enable, cfg.Net.SASL.Enable, string(cfg.Net.SASL.Mechanism)
	}
	switch LayerOf(err) {
	case Kerberos:
		service := ""
		if cfg != nil {
			service = cfg.Net.SASL.GSSAPI.ServiceName
		}
		return kerberosHint(KerberosStepOf(err), service)
	case TLS:
		return "TLS: " + tlsHint(err)
	case Credentials:
		if mech == sarama.SASLTypeGSSAPI {
			return gssapiCredentialsHint
		}
		if credentialsRefused(err) || mech == sarama.SASLTypeOAuth {
			return "SASL credentials: the OAuth token endpoint or the broker refused them: check clientId and clientSecret in sasl.jaas.config, sasl.oauthbearer.token.endpoint.url, and the token's audience and issuer the broker expects"
		}
		return fmt.Sprintf("SASL credentials: the broker refused the username and password for %s: check sasl.jaas.config, and that the user has %s credentials on this cluster", mech, mech)
	case SASLMechanism:
		return fmt.Sprintf("SASL mechanism: the listener does not accept SASL %s: check sasl.mechanism against the broker's sasl.enabled.mechanisms, and that security.protocol (SASL_SSL or SASL_PLAINTEXT) is the listener's", mech)
	case Authorization:
		return "authorization: authenticated, but the broker's ACLs deny this operation to the principal (see the permissions in docs/operations.md)"
	case Network:
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			return "" // nothing listens there, or it is unreachable: the error says so
		}
		if !tlsOn || !saslOn {
			return fmt.Sprintf("network: the broker closed the connection: is security.protocol (%s) right for this listener?", protocol(tlsOn, saslOn))
		}
		return "network: the broker closed the connection"
	}
	return ""
}

func tlsHint(err error) string {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		opErr    *net.OpError
	)
	switch {
	case errors.As(err, &unknown):
		return "the broker's certificate is not signed by a CA in the truststore: check ssl.truststore.location (or ssl.truststore.certificates) and ssl.truststore.type"
	case errors.As(err, &hostname):
		return fmt.Sprintf("the broker's certificate is not valid for %q: connect with a name it holds, or turn the host name check off with ssl.endpoint.identification.algorithm= (empty)", hostname.Host)
	case errors.As(err, &invalid):
		return "the broker's certificate is not valid (expired, not yet valid, or not for servers)"
	case errors.As(err, &record):
		return "the listener does not speak TLS: is security.protocol (SSL, SASL_SSL) right for this listener?"
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		return "the broker refused the handshake: if the listener requires client certificates (ssl.client.auth=required), check ssl.keystore.location, ssl.keystore.password and ssl.key.password, and that the broker trusts their CA"
	}
	return "the handshake failed: check security.protocol and the ssl.* settings"
}

func protocol(tlsOn, saslOn bool) string {
	switch {
	case tlsOn && saslOn:
		return "SASL_SSL"
	case tlsOn:
		return "SSL"
	case saslOn:
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}

// Describe is err's message with its hint, if any.
func Describe(err error, cfg *sarama.Config) string {
	if h := Hint(err, cfg); h != "" {
		return err.Error() + " (" + h + ")"
	}
	return err.Error()
}

// Permission is an ACL operation on a resource, e.g. READ on topic "orders".
type Permission struct {
	Operation    string // READ, WRITE, DESCRIBE, ...
	ResourceType string // topic, group, cluster
	Name         string
}

func (p Permission) String() string {
	if p.ResourceType == "cluster" {
		return p.Operation + " on the cluster"
	}
	return fmt.Sprintf("%s on %s %q", p.Operation, p.ResourceType, p.Name)
}

// Needs names what an authorization failure lacks: when err is one
// (LayerOf(err) == Authorization), it is wrapped as
// `<err> (authorization: READ on topic "t" is needed)`, naming those of perms
// whose resource type the broker denied (a topic, group or cluster
// authorization error), or all of them when none is of that type; a
// permission err's message names already is left out. Any other err, and an
// err wrapped by Needs before, is returned as it is. errors.Is and errors.As
// see through the wrapping.
func Needs(err error, perms ...Permission) error {
	if err == nil || len(perms) == 0 || LayerOf(err) != Authorization {
		return err
	}
	var done *needsError
	if errors.As(err, &done) {
		return err
	}
	denied := deniedType(err)
	var named []Permission
	for _, p := range perms {
		if p.ResourceType == denied {
			named = append(named, p)
		}
	}
	if len(named) == 0 {
		named = perms
	}
	msg := err.Error()
	var parts []string
	for _, p := range named {
		if s := p.String(); !strings.Contains(msg, s) && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return err
	}
	verb := " is needed"
	if len(parts) > 1 {
		verb = " are needed"
	}
	return &needsError{err: err, msg: msg + " (authorization: " + strings.Join(parts, " and ") + verb + ")"}
}

// deniedType is the resource type of the authorization error err.
func deniedType(err error) string {
	switch {
	case errors.Is(err, sarama.ErrTopicAuthorizationFailed):
		return "topic"
	case errors.Is(err, sarama.ErrGroupAuthorizationFailed):
		return "group"
	case errors.Is(err, sarama.ErrClusterAuthorizationFailed):
		return "cluster"
	}
	return ""
}

type needsError struct {
	err error
	msg string
}

func (e *needsError) Error() string { return e.msg }
func (e *needsError) Unwrap() error { return e.err }
