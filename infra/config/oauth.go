package config

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// OAUTHBEARER with the OAuth 2 client-credentials grant, as Kafka's Java client runs it
// (KIP-768):
//
//	sasl.mechanism=OAUTHBEARER
//	sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
//	sasl.oauthbearer.token.endpoint.url=https://idp.example/oauth2/token
//	sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
//	    clientId="..." clientSecret="..." scope="...";
const (
	oauthLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	oauthLoginKey    = "sasl.login.callback.handler.class"
)

// oauthLoginHandlers are the class names Kafka's client-credentials login handler has
// had (it moved out of the secured package in 3.4).
var oauthLoginHandlers = []string{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
}

// oauthConfig maps the OAUTHBEARER settings onto a token provider for sarama.
func oauthConfig(sc *sarama.Config, p props, e jaasEntry) error {
	if e.module != oauthLoginModule {
		return p.invalid("sasl.jaas.config", "OAUTHBEARER takes %s, not %s", oauthLoginModule, e.module)
	}
	if cls := strings.TrimSpace(p[oauthLoginKey].value); cls != "" && !containsString(oauthLoginHandlers, cls) {
		return p.invalid(oauthLoginKey, "checkpointd cannot load Java classes: want %s (the client-credentials login) or leave it out", oauthLoginHandlers[0])
	}
	endpoint := strings.TrimSpace(p["sasl.oauthbearer.token.endpoint.url"].value)
	if endpoint == "" {
		return &clientError{key: strings.Replace(p["sasl.jaas.config"].key, "sasl.jaas.config", "sasl.oauthbearer.token.endpoint.url", 1),
			msg: "required for OAUTHBEARER: the OAuth token endpoint checkpointd gets tokens from with the client-credentials grant (unsecured test tokens are not supported)"}
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return p.invalid("sasl.oauthbearer.token.endpoint.url", "want an http or https URL")
	}
	// The JAAS options win over the client properties Kafka 4.1 added for them (KIP-1139).
	tp := &tokenProvider{
		endpoint:     endpoint,
		clientID:     cmp.Or(e.options["clientId"], strings.TrimSpace(p["sasl.oauthbearer.client.credentials.client.id"].value)),
		clientSecret: cmp.Or(e.options["clientSecret"], p["sasl.oauthbearer.client.credentials.client.secret"].value),
		scope:        cmp.Or(e.options["scope"], strings.TrimSpace(p["sasl.oauthbearer.scope"].value)),
		window:       0.8, timeout: 10 * time.Second, now: time.Now,
	}
	if tp.clientID == "" || tp.clientSecret == "" {
		return p.invalid("sasl.jaas.config", `OAUTHBEARER wants clientId="..." and clientSecret="..." options (or sasl.oauthbearer.client.credentials.client.id and .client.secret)`)
	}
	tp.extensions = map[string]string{}
	for k, v := range e.options {
		if name, ok := strings.CutPrefix(k, "extension_"); ok {
			tp.extensions[name] = v
		}
	}
	if err := oauthTimings(p, tp); err != nil {
		return err
	}
	client, err := tokenEndpointClient(p, e)
	if err != nil {
		return err
	}
	tp.client = client
	sc.Net.SASL.Mechanism = sarama.SASLTypeOAuth
	sc.Net.SASL.TokenProvider = tp
	return nil
}

// tokenEndpointClient is the HTTP client for the token endpoint. As in Kafka, it trusts
// the system's roots, not the client's ssl.truststore.* (which is for the brokers),
// unless the JAAS config carries its own ssl.truststore.location (with .type and
// .password) or ssl.truststore.certificates options.
func tokenEndpointClient(p props, e jaasEntry) (*http.Client, error) {
	jp := props{}
	for k, v := range e.options {
		if strings.HasPrefix(k, "ssl.") {
			jp[k] = clientProp{value: v, key: p["sasl.jaas.config"].key + " option " + k}
		}
	}
	if len(jp) == 0 {
		return &http.Client{}, nil
	}
	roots, err := truststore(jp)
	if err != nil {
		var ce *clientError
		if errors.As(err, &ce) {
			// Reported under the JAAS config, naming its option; its value is secret.
			_, option, _ := strings.Cut(ce.key, " option ")
			return nil, &clientError{key: p["sasl.jaas.config"].key, msg: fmt.Sprintf("option %s (the token endpoint's truststore): %s", option, ce.msg)}
		}
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}, nil
}

// oauthTimings reads the login timeouts and the refresh window.
func oauthTimings(p props, tp *tokenProvider) error {
	var connect, read time.Duration
	if err := p.millis("sasl.login.connect.timeout.ms", 1, &connect); err != nil {
		return err
	}
	if err := p.millis("sasl.login.read.timeout.ms", 1, &read); err != nil {
		return err
	}
	orDefault := func(d time.Duration) time.Duration { return cmpOrDuration(d, 10*time.Second) }
	if connect > 0 || read > 0 {
		tp.timeout = orDefault(connect) + orDefault(read)
	}
	if p.has("sasl.login.refresh.window.factor") {
		f, err := strconv.ParseFloat(strings.TrimSpace(p["sasl.login.refresh.window.factor"].value), 64)
		if err != nil || f < 0.5 || f > 1 {
			return p.invalid("sasl.login.refresh.window.factor", "want a number from 0.5 to 1.0 (Kafka's range)")
		}
		tp.window = f
	}
	return nil
}

func cmpOrDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tokenProvider gets access tokens from an OAuth token endpoint with the
// client-credentials grant and hands the same one to every connection until a
// window factor of its lifetime has passed (Kafka's sasl.login.refresh.window.factor,
// 0.8 by default); the next connection after that gets a fresh one, before the old
// one expires. It is safe for concurrent use.
type tokenProvider struct {
	endpoint, clientID, clientSecret, scope string
	extensions                              map[string]string
	window                                  float64
	timeout                                 time.Duration
	client                                  *http.Client
	now                                     func() time.Time

	mu      sync.Mutex
	token   string
	refresh time.Time // when to get a new token
}

// Token returns the cached token or a fresh one.
func (tp *tokenProvider) Token() (*sarama.AccessToken, error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.token == "" || !tp.now().Before(tp.refresh) {
		token, lifetime, err := tp.fetch()
		if err != nil {
			return nil, err
		}
		tp.token = token
		tp.refresh = tp.now().Add(time.Duration(float64(lifetime) * tp.window))
	}
	return &sarama.AccessToken{Token: tp.token, Extensions: tp.extensions}, nil
}

// errTokenEndpoint marks a token endpoint's refusal of the client credentials.
var errTokenEndpoint = credentialsRejected("the OAuth token endpoint refused the client credentials")

// credentialsRejected is an error that says the credentials were refused, so that
// kafkaerr reports it at the credentials layer.
type credentialsRejected string

func (e credentialsRejected) Error() string             { return string(e) }
func (e credentialsRejected) CredentialsRejected() bool { return true }

// fetch asks the endpoint for a token, as Kafka's HttpAccessTokenRetriever does:
// POST grant_type=client_credentials[&scope=...], the client id and secret in HTTP
// basic authentication, URL-encoded.
func (tp *tokenProvider) fetch() (string, time.Duration, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if tp.scope != "" {
		form.Set("scope", tp.scope)
	}
	ctx, cancel := context.WithTimeout(context.Background(), tp.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tp.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("OAuth token request to %s: %w", tp.endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(tp.clientID), url.QueryEscape(tp.clientSecret))
	resp, err := tp.client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("OAuth token request to %s: %w", tp.endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", 0, fmt.Errorf("OAuth token response from %s: %w", tp.endpoint, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusBadRequest && strings.Contains(string(body), "invalid_client"):
		return "", 0, fmt.Errorf("%w (HTTP %d from %s): check clientId and clientSecret in sasl.jaas.config", errTokenEndpoint, resp.StatusCode, tp.endpoint)
	case resp.StatusCode/100 != 2:
		return "", 0, fmt.Errorf("OAuth token endpoint %s answered HTTP %d", tp.endpoint, resp.StatusCode)
	}
	token, lifetime, err := parseTokenResponse(body)
	if err != nil {
		return "", 0, fmt.Errorf("OAuth token response from %s: %w", tp.endpoint, err)
	}
	return token, lifetime, nil
}

// parseTokenResponse reads an OAuth 2 token response (RFC 6749 §5.1): access_token
// and expires_in in seconds. Without expires_in the lifetime is taken as an hour.
func parseTokenResponse(body []byte) (string, time.Duration, error) {
	var r struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return "", 0, fmt.Errorf("not a JSON token response: %w", err)
	}
	if r.AccessToken == "" {
		return "", 0, errors.New("no access_token in it")
	}
	if len(r.ExpiresIn) == 0 || string(r.ExpiresIn) == "null" {
		return r.AccessToken, time.Hour, nil
	}
	// Some servers send the number as a string.
	secs, err := strconv.ParseFloat(strings.Trim(string(r.ExpiresIn), `"`), 64)
	lifetime := time.Duration(secs * float64(time.Second))
	if err != nil || lifetime <= 0 || secs > 1e9 {
		return "", 0, fmt.Errorf("expires_in %s is not a positive number of seconds", r.ExpiresIn)
	}
	return r.AccessToken, lifetime, nil
}
