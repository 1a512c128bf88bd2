package kafkatest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// OAuthServer is an OAuth 2 authorization server for the secured cluster's OAUTHBEARER
// listener: a token endpoint for the client-credentials grant, issuing RS256 JWTs for
// its clients, and the JWKS the broker verifies them with.
type OAuthServer struct {
	TokenURL, JWKSURL, Issuer string
	Audience                  string

	key     *rsa.PrivateKey
	kid     string
	clients map[string]OAuthClient
	srv     *http.Server

	mu     sync.Mutex
	issued map[string]int
}

// OAuthClient is a client of the OAuth server; its tokens last Lifetime.
type OAuthClient struct {
	ID, Secret string
	Lifetime   time.Duration
	// Forged tokens are signed with a key the JWKS does not hold: the broker must
	// refuse them.
	Forged bool
}

func startOAuthServer(clients ...OAuthClient) (*OAuthServer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("OAuth server: %w", err)
	}
	base := "http://" + ln.Addr().String()
	o := &OAuthServer{
		TokenURL: base + "/token", JWKSURL: base + "/jwks", Issuer: base, Audience: "kafka",
		key: key, kid: "kafkatest-1", clients: map[string]OAuthClient{}, issued: map[string]int{},
	}
	for _, c := range clients {
		o.clients[c.ID] = c
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/token", o.token)
	mux.HandleFunc("/jwks", o.jwks)
	o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = o.srv.Serve(ln) }()
	return o, nil
}

func (o *OAuthServer) close() error { return o.srv.Close() }

// Issued is how many tokens the server issued to a client.
func (o *OAuthServer) Issued(clientID string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.issued[clientID]
}

// token answers the client-credentials grant, the client authenticated with HTTP
// basic authentication (URL-encoded id and secret, RFC 6749 §2.3.1).
func (o *OAuthServer) token(w http.ResponseWriter, r *http.Request) {
	var err error
	id, secret, ok := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	if err = r.ParseForm(); err != nil || r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	c, known := o.clients[id]
	if !ok || !known || c.Secret != secret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	now := time.Now()
	key := o.key
	if c.Forged {
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
	}
	claims := map[string]any{
		"iss": o.Issuer, "sub": c.ID, "aud": o.Audience, "iat": now.Unix(), "nbf": now.Unix() - 1,
		"exp": now.Add(c.Lifetime).Unix(),
	}
	if scope := r.PostForm.Get("scope"); scope != "" {
		claims["scope"] = scope // Kafka refuses an empty scope claim
	}
	jwt, err := o.sign(key, claims)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	o.mu.Lock()
	o.issued[c.ID]++
	o.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": jwt, "token_type": "Bearer", "expires_in": int(c.Lifetime.Seconds())})
}

func (o *OAuthServer) jwks(w http.ResponseWriter, _ *http.Request) {
	b64 := base64.RawURLEncoding.EncodeToString
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": o.kid,
		"n": b64(o.key.N.Bytes()), "e": b64(big.NewInt(int64(o.key.E)).Bytes()),
	}}})
}

// sign makes an RS256 JWT of claims, signed with key.
func (o *OAuthServer) sign(key *rsa.PrivateKey, claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": o.kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	signingInput := b64(header) + "." + b64(payload)
	sum := sha256.Sum256([]byte(signingInput))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", errors.Join(errors.New("sign token"), err)
	}
	return signingInput + "." + b64(sig), nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// brokerProps are the broker settings of an OAUTHBEARER listener named OAUTH that
// validates JWTs against the server's JWKS. The validator class is set explicitly:
// with Kafka 4.1.1's default (DefaultJwtValidator) this broker accepted a token
// signed by a key the JWKS does not hold.
func (o *OAuthServer) brokerProps() map[string]string {
	return map[string]string{
		"listener.name.oauth.sasl.enabled.mechanisms":                        "OAUTHBEARER",
		"listener.name.oauth.oauthbearer.sasl.jaas.config":                   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
		"listener.name.oauth.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url":                                 o.JWKSURL,
		"sasl.oauthbearer.jwt.validator.class":                               "org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator",
		"sasl.oauthbearer.clock.skew.seconds":                                "0", // an expired token is refused at once
		"sasl.oauthbearer.expected.audience":                                 o.Audience,
		"sasl.oauthbearer.expected.issuer":                                   o.Issuer,
	}
}

// jvmFlags allow the broker to fetch the JWKS (Kafka 4 refuses URLs not listed).
func (o *OAuthServer) jvmFlags() []string {
	return []string{"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=" + strings.Join([]string{o.JWKSURL, o.TokenURL}, ",")}
}
