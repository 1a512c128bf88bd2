package config

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// tokenServer is an OAuth token endpoint for one client: it answers the
// client-credentials grant with numbered tokens.
type tokenServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	lastForm url.Values
}

func newTokenServer(t *testing.T, id, secret string, reply func(n int) (int, string)) *tokenServer {
	t.Helper()
	ts := &tokenServer{}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.requests++
		gotID, gotSecret, ok := r.BasicAuth()
		gotID, _ = url.QueryUnescape(gotID)
		gotSecret, _ = url.QueryUnescape(gotSecret)
		_ = r.ParseForm()
		ts.lastForm = r.PostForm
		switch {
		case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded":
			http.Error(w, "bad request", http.StatusBadRequest)
		case r.PostForm.Get("grant_type") != "client_credentials":
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		case !ok || gotID != id || gotSecret != secret:
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		default:
			code, body := reply(ts.requests)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.requests
}

const (
	oauthID     = "checkpointd client:1" // needs URL encoding in basic auth
	oauthSecret = "s3cr/et+%"
)

func oauthProps(endpoint string, extra ...string) map[string]string {
	return with(append([]string{
		"source.cluster.security.protocol", "SASL_PLAINTEXT",
		"source.cluster.sasl.mechanism", "OAUTHBEARER",
		"source.cluster.sasl.login.callback.handler.class", oauthLoginHandlers[0],
		"source.cluster.sasl.oauthbearer.token.endpoint.url", endpoint,
		"source.cluster.sasl.jaas.config", oauthLoginModule + ` required clientId="` + oauthID + `" clientSecret="` + oauthSecret + `" scope="kafka read" extension_logicalCluster="lkc-1";`,
	}, extra...)...)
}

// TestOAuthTokenRefresh: one token serves every connection until the window
// factor of its lifetime has passed, then the next connection gets a new one,
// before the old one expires.
func TestOAuthTokenRefresh(t *testing.T) {
	ts := newTokenServer(t, oauthID, oauthSecret, func(n int) (int, string) {
		return 200, fmt.Sprintf(`{"access_token":"token-%d","token_type":"Bearer","expires_in":100}`, n)
	})
	sc := mustSarama(t, mustConfig(t, oauthProps(ts.URL)), SourceConsumer)
	if !sc.Net.SASL.Enable || sc.Net.SASL.Mechanism != sarama.SASLTypeOAuth {
		t.Fatalf("SASL %v %q", sc.Net.SASL.Enable, sc.Net.SASL.Mechanism)
	}
	tp := sc.Net.SASL.TokenProvider.(*tokenProvider)
	now := time.Unix(1000, 0)
	tp.now = func() time.Time { return now }
	steps := []struct {
		at       time.Duration
		token    string
		requests int
	}{
		{0, "token-1", 1},
		{time.Second, "token-1", 1},
		{79 * time.Second, "token-1", 1},
		{80 * time.Second, "token-2", 2}, // 0.8 of 100 s: refreshed 20 s before expiry
		{81 * time.Second, "token-2", 2},
		{160 * time.Second, "token-3", 3},
	}
	for _, s := range steps {
		now = time.Unix(1000, 0).Add(s.at)
		tok, err := tp.Token()
		if err != nil {
			t.Fatalf("at %v: %v", s.at, err)
		}
		if tok.Token != s.token || ts.count() != s.requests {
			t.Errorf("at %v: %s after %d requests, want %s after %d", s.at, tok.Token, ts.count(), s.token, s.requests)
		}
		if tok.Extensions["logicalCluster"] != "lkc-1" {
			t.Errorf("extensions %v", tok.Extensions)
		}
	}
	if got := ts.lastForm.Get("scope"); got != "kafka read" {
		t.Errorf("scope %q", got)
	}
}

func TestOAuthRefreshWindow(t *testing.T) {
	ts := newTokenServer(t, oauthID, oauthSecret, func(n int) (int, string) {
		return 200, fmt.Sprintf(`{"access_token":"token-%d","expires_in":"100"}`, n) // a string, as some servers send
	})
	sc := mustSarama(t, mustConfig(t, oauthProps(ts.URL, "source.cluster.sasl.login.refresh.window.factor", "0.5")), SourceConsumer)
	tp := sc.Net.SASL.TokenProvider.(*tokenProvider)
	now := time.Unix(0, 0)
	tp.now = func() time.Time { return now }
	if tok, _ := tp.Token(); tok.Token != "token-1" {
		t.Fatal(tok.Token)
	}
	now = now.Add(50 * time.Second)
	if tok, _ := tp.Token(); tok.Token != "token-2" {
		t.Errorf("at half the lifetime with factor 0.5: %s", tok.Token)
	}
}

func TestOAuthTokenErrors(t *testing.T) {
	cases := []struct {
		name        string
		id, secret  string
		code        int
		body        string
		want        string
		credentials bool
	}{
		{"wrong secret", oauthID, "other", 200, `{"access_token":"t","expires_in":60}`, "refused the client credentials (HTTP 401", true},
		{"server error", oauthID, oauthSecret, 503, `oops`, "answered HTTP 503", false},
		{"not JSON", oauthID, oauthSecret, 200, `<html>`, "not a JSON token response", false},
		{"no token", oauthID, oauthSecret, 200, `{"expires_in":60}`, "no access_token", false},
		{"bad lifetime", oauthID, oauthSecret, 200, `{"access_token":"t","expires_in":-5}`, "not a positive number", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTokenServer(t, tc.id, tc.secret, func(int) (int, string) { return tc.code, tc.body })
			tp := mustSarama(t, mustConfig(t, oauthProps(ts.URL)), SourceConsumer).Net.SASL.TokenProvider
			_, err := tp.Token()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if errors.Is(err, errTokenEndpoint) != tc.credentials {
				t.Errorf("credentials error: %v", errors.Is(err, errTokenEndpoint))
			}
			if strings.Contains(err.Error(), oauthSecret) {
				t.Errorf("the secret is in the error: %v", err)
			}
		})
	}
}

// TestOAuthClientProperties: Kafka 4.1's client properties stand in for the JAAS
// options.
func TestOAuthClientProperties(t *testing.T) {
	ts := newTokenServer(t, oauthID, oauthSecret, func(n int) (int, string) {
		return 200, `{"access_token":"t","expires_in":60}`
	})
	props := oauthProps(ts.URL,
		"source.cluster.sasl.jaas.config", oauthLoginModule+" required;",
		"source.cluster.sasl.oauthbearer.client.credentials.client.id", oauthID,
		"source.cluster.sasl.oauthbearer.client.credentials.client.secret", oauthSecret,
		"source.cluster.sasl.oauthbearer.scope", "s1")
	tp := mustSarama(t, mustConfig(t, props), SourceConsumer).Net.SASL.TokenProvider
	if _, err := tp.Token(); err != nil {
		t.Fatal(err)
	}
	if got := ts.lastForm.Get("scope"); got != "s1" {
		t.Errorf("scope %q", got)
	}
}

// TestOAuthTokenEndpointTLS: the token endpoint is verified against the system's
// roots, as Kafka does, not the brokers' truststore; a truststore given as JAAS
// options (Kafka's way for the token endpoint) is used instead when present.
func TestOAuthTokenEndpointTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"access_token":"t","expires_in":60}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	idpCA := write(t, dir, "idp-ca.pem", pemOf("CERTIFICATE", srv.Certificate().Raw))
	brokerCA := write(t, dir, "broker-ca.pem", newPKI(t).caPEM)
	jaasWith := func(options string) string {
		return oauthLoginModule + ` required clientId="c" clientSecret="s" ` + options + `;`
	}
	cases := []struct {
		name  string
		props map[string]string
		ok    bool
	}{
		{"system roots only", oauthProps(srv.URL, "source.cluster.sasl.jaas.config", jaasWith("")), false},
		{"the brokers' truststore is not used", oauthProps(srv.URL, "source.cluster.security.protocol", "SASL_SSL",
			"source.cluster.ssl.truststore.location", idpCA, "source.cluster.sasl.jaas.config", jaasWith("")), false},
		{"a truststore in the JAAS options", oauthProps(srv.URL, "source.cluster.security.protocol", "SASL_SSL",
			"source.cluster.ssl.truststore.location", brokerCA, "source.cluster.sasl.jaas.config", jaasWith(`ssl.truststore.location="`+idpCA+`" ssl.truststore.type="PEM"`)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustSarama(t, mustConfig(t, tc.props), SourceConsumer).Net.SASL.TokenProvider.Token()
			if (err == nil) != tc.ok {
				t.Errorf("token: %v, want success %v", err, tc.ok)
			}
		})
	}
	_, rep, err := FromProperties(oauthProps(srv.URL, "source.cluster.sasl.jaas.config", jaasWith(`ssl.truststore.location="/nowhere.pem"`)), nil, nil)
	if err == nil || len(rep.Problems) != 1 || rep.Problems[0].Key != "source.cluster.sasl.jaas.config" || !strings.Contains(rep.Problems[0].Message, "option ssl.truststore.location") {
		t.Errorf("a missing JAAS truststore: %v", rep.Problems)
	}
}

func TestOAuthConfigProblems(t *testing.T) {
	cases := []struct {
		name, key, want string
		props           map[string]string
	}{
		{"other login handler", "source.cluster.sasl.login.callback.handler.class", "cannot load Java classes",
			oauthProps("http://idp", "source.cluster.sasl.login.callback.handler.class", "com.example.Login")},
		{"no endpoint", "source.cluster.sasl.oauthbearer.token.endpoint.url", "required for OAUTHBEARER",
			oauthProps("", "source.cluster.sasl.oauthbearer.token.endpoint.url", "")},
		{"endpoint not a URL", "source.cluster.sasl.oauthbearer.token.endpoint.url", "http or https URL", oauthProps("file:///token")},
		{"no client secret", "source.cluster.sasl.jaas.config", "clientSecret",
			oauthProps("http://idp", "source.cluster.sasl.jaas.config", oauthLoginModule+` required clientId="c";`)},
		{"PLAIN module for OAUTHBEARER", "source.cluster.sasl.jaas.config", "OAUTHBEARER takes",
			oauthProps("http://idp", "source.cluster.sasl.jaas.config", plainLoginModule+` required username="u" password="p";`)},
		{"window factor", "source.cluster.sasl.login.refresh.window.factor", "0.5 to 1.0",
			oauthProps("http://idp", "source.cluster.sasl.login.refresh.window.factor", "0.2")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, rep, err := FromProperties(tc.props, nil, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			if len(rep.Problems) != 1 || rep.Problems[0].Key != tc.key || !strings.Contains(rep.Problems[0].Message, tc.want) {
				t.Errorf("problems %v, want one for %s saying %q", rep.Problems, tc.key, tc.want)
			}
		})
	}
}

func FuzzParseTokenResponse(f *testing.F) {
	for _, s := range []string{`{"access_token":"t","expires_in":3600}`, `{"access_token":"t","expires_in":"60"}`, `{"access_token":"t"}`, `{}`, `[]`, `{"access_token":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		token, lifetime, err := parseTokenResponse(body)
		if err == nil && (token == "" || lifetime <= 0) {
			t.Fatalf("accepted %q as token %q lasting %v", body, token, lifetime)
		}
	})
}
