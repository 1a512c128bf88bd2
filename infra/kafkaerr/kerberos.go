package kafkaerr

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// KerberosStep is what failed in a Kerberos (SASL GSSAPI) login, before any broker saw
// a ticket: the KDC could not be reached, or it refused the client.
type KerberosStep int

const (
	NotKerberos        KerberosStep = iota
	KDCUnreachable                  // no KDC of the realm answered, or the krb5.conf names none
	ClientUnknown                   // the KDC has no such client principal
	ServiceUnknown                  // the KDC has no principal for <service>/<broker host>
	KeyRefused                      // wrong password, or a keytab key the KDC no longer has
	ClockSkew                       // the client's and the KDC's clocks differ too much
	Expired                         // an expired ticket, password or principal
	PrincipalRevoked                // the KDC locked, disabled or expired the client principal
	NoCommonEncryption              // no encryption type both sides allow
	OtherKerberos                   // any other KDC or Kerberos library error
)

func (s KerberosStep) String() string {
	switch s {
	case KDCUnreachable:
		return "KDC unreachable"
	case ClientUnknown:
		return "client principal unknown"
	case ServiceUnknown:
		return "broker principal unknown"
	case KeyRefused:
		return "key refused"
	case ClockSkew:
		return "clock skew"
	case Expired:
		return "expired"
	case PrincipalRevoked:
		return "principal revoked"
	case NoCommonEncryption:
		return "no common encryption type"
	case OtherKerberos:
		return "Kerberos"
	}
	return "not Kerberos"
}

// KDC error codes of RFC 4120 §7.5.9 that name a step.
var kdcCodes = map[int]KerberosStep{
	1:  Expired,            // KDC_ERR_NAME_EXP: the client's entry expired
	2:  Expired,            // KDC_ERR_SERVICE_EXP
	6:  ClientUnknown,      // KDC_ERR_C_PRINCIPAL_UNKNOWN
	7:  ServiceUnknown,     // KDC_ERR_S_PRINCIPAL_UNKNOWN
	14: NoCommonEncryption, // KDC_ERR_ETYPE_NOSUPP
	18: PrincipalRevoked,   // KDC_ERR_CLIENT_REVOKED (Kerby also for an expired principal)
	23: Expired,            // KDC_ERR_KEY_EXPIRED: the password expired
	24: KeyRefused,         // KDC_ERR_PREAUTH_FAILED (Kerby also for a skewed timestamp)
	31: KeyRefused,         // KRB_AP_ERR_BAD_INTEGRITY
	32: Expired,            // KRB_AP_ERR_TKT_EXPIRED
	37: ClockSkew,          // KRB_AP_ERR_SKEW
	68: KDCUnreachable,     // KDC_ERR_WRONG_REALM
}

// gokrb5 flattens the errors it wraps into text, so the steps are read from it:
// "[Root cause: KDC_Error] ... KRB Error: (6) KDC_ERR_C_PRINCIPAL_UNKNOWN ...".
var (
	krbCode      = regexp.MustCompile(`KRB Error: \((\d+)\)`)
	krbRootCause = regexp.MustCompile(`\[Root cause: (\w+)\]`)
)

// KerberosStepOf says which Kerberos step err comes from, or NotKerberos.
func KerberosStepOf(err error) KerberosStep {
	if err == nil {
		return NotKerberos
	}
	msg := err.Error()
	root := krbRootCause.FindStringSubmatch(msg)
	code := krbCode.FindStringSubmatch(msg)
	if root == nil && code == nil {
		return NotKerberos
	}
	if code != nil {
		n, _ := strconv.Atoi(code[1])
		if s, ok := kdcCodes[n]; ok {
			return s
		}
		return OtherKerberos
	}
	switch {
	case root[1] == "Networking_Error", strings.Contains(msg, "no KDCs defined"):
		return KDCUnreachable
	case strings.Contains(msg, "client password/keytab incorrect"), strings.Contains(msg, "matching key not found in keytab"):
		// The KDC answered with a reply sealed in a key the client does not have.
		return KeyRefused
	}
	return OtherKerberos
}

// kerberosHint says what to check for a Kerberos step; service is the broker's
// service name (sasl.kerberos.service.name) when known.
func kerberosHint(s KerberosStep, service string) string {
	service = cmpOr(service, "<sasl.kerberos.service.name>")
	var h string
	switch s {
	case KDCUnreachable:
		h = "no KDC of the realm answered: check the realm's kdc entries in the krb5.conf (checkpointd.kerberos.krb5.conf, KRB5_CONFIG or /etc/krb5.conf) and that this host reaches them (port 88; udp_preference_limit = 1 for TCP only)"
	case ClientUnknown:
		h = "the KDC has no such client principal: check principal=\"name@REALM\" in sasl.jaas.config (name and realm are case-sensitive)"
	case ServiceUnknown:
		h = fmt.Sprintf("the KDC has no principal %s/<broker host>: check sasl.kerberos.service.name, and that the brokers are reached by the host names in their principals (the bootstrap address and the advertised listeners), not by IP address", service)
	case KeyRefused:
		h = "the KDC refused the client's key: a wrong password, or a keytab whose key is older than the principal's (export it again); a KDC that refuses a skewed clock without saying so (Apache Kerby) answers this too"
	case ClockSkew:
		h = "this host's clock and the KDC's differ by more than the allowed skew (clockskew, 5 minutes by default): synchronise both with NTP"
	case Expired:
		h = "an expired ticket, password or principal: renew the principal's password or keytab at the KDC"
	case PrincipalRevoked:
		h = "the KDC has locked, disabled or expired the client principal: ask its administrator"
	case NoCommonEncryption:
		h = "no encryption type both sides allow: compare default_tkt_enctypes and permitted_enctypes in the krb5.conf with the KDC's and the keytab's (klist -ke)"
	default:
		h = "the Kerberos login failed: check sasl.jaas.config (principal, keyTab) and the krb5.conf"
	}
	return "Kerberos (" + s.String() + "): " + h
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// gssapiCredentialsHint is the hint for a broker that refused a Kerberos login the
// KDC had accepted.
const gssapiCredentialsHint = "SASL credentials: the broker refused the Kerberos service ticket the KDC issued: the broker's keytab may not hold its principal's current key, or the broker's clock differs from this host's (the broker's log says which)"
