package regauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/testkit/distribution"
)

// oauthService is an in-memory token service that records each request
// as "METHOD grant user:secret" ("GET basic robot:pw", "POST password
// robot:pw", "POST refresh_token rt-1", "GET anonymous") and answers
// with answer (status and the refresh_token to hand out, "" for none).
type oauthService struct {
	mu     sync.Mutex
	calls  []string
	forms  []map[string]string
	answer func(call string, n int) (status int, refresh string)
}

func (s *oauthService) RoundTrip(r *http.Request) (*http.Response, error) {
	call, form := describeTokenRequest(r)
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.forms = append(s.forms, form)
	n := len(s.calls)
	s.mu.Unlock()
	status, refresh := http.StatusOK, ""
	if s.answer != nil {
		status, refresh = s.answer(call, n)
	}
	body := fmt.Sprintf(`{"access_token":"tok-%d","expires_in":300`, n)
	if refresh != "" {
		body += `,"refresh_token":"` + refresh + `"`
	}
	body += "}"
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}, Request: r}, nil
}

// describeTokenRequest is r as the test tables write it, and its
// parameters (query or form).
func describeTokenRequest(r *http.Request) (string, map[string]string) {
	params := map[string]string{}
	if r.Method == http.MethodPost {
		_ = r.ParseForm()
		for k := range r.PostForm {
			params[k] = r.PostForm.Get(k)
		}
		switch f := r.PostForm; f.Get("grant_type") {
		case "password":
			return "POST password " + f.Get("username") + ":" + f.Get("password"), params
		case "refresh_token":
			return "POST refresh_token " + f.Get("refresh_token"), params
		}
		return "POST ?", params
	}
	for k := range r.URL.Query() {
		params[k] = r.URL.Query().Get(k)
	}
	if u, p, ok := r.BasicAuth(); ok {
		return "GET basic " + u + ":" + p, params
	}
	return "GET anonymous", params
}

func (s *oauthService) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// rotatingSource is a Source whose password the test changes.
type rotatingSource struct {
	mu   sync.Mutex
	cred Credential
}

func (r *rotatingSource) Credential(context.Context) (Credential, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cred, nil
}

func (r *rotatingSource) set(c Credential) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cred = c
}

var (
	robotPW   = Credential{Username: "robot", Password: NewSecret("pw")}
	robotPW2  = Credential{Username: "robot", Password: NewSecret("pw2")}
	identity  = Credential{IdentityToken: NewSecret("id-1")}
	noAnswers = func(string, int) (int, string) { return http.StatusOK, "" }
)

// tokenGrantCase is three tokens asked of a token service and the
// requests it must see.
type tokenGrantCase struct {
	name   string
	cred   Credential
	rotate *Credential // the credentials before the third token
	answer func(call string, n int) (int, string)
	want   []string
}

var tokenGrantCases = []tokenGrantCase{
	{name: "anonymous asks with GET", cred: Credential{}, answer: noAnswers,
		want: []string{"GET anonymous", "GET anonymous", "GET anonymous"}},
	{name: "password grant POST", cred: robotPW, answer: noAnswers,
		want: []string{"POST password robot:pw", "POST password robot:pw", "POST password robot:pw"}},
	{name: "identity token: refresh_token grant", cred: identity, answer: noAnswers,
		want: []string{"POST refresh_token id-1", "POST refresh_token id-1", "POST refresh_token id-1"}},
	{name: "405 to POST: GET with Basic, then and from then on", cred: robotPW,
		answer: func(call string, _ int) (int, string) {
			if strings.HasPrefix(call, "POST") {
				return http.StatusMethodNotAllowed, ""
			}
			return http.StatusOK, ""
		},
		want: []string{"POST password robot:pw", "GET basic robot:pw", "GET basic robot:pw", "GET basic robot:pw"}},
	{name: "404 to POST of an identity token: GET with it as the password", cred: identity,
		answer: func(call string, _ int) (int, string) {
			if strings.HasPrefix(call, "POST") {
				return http.StatusNotFound, ""
			}
			return http.StatusOK, ""
		},
		want: []string{"POST refresh_token id-1", "GET basic :id-1", "GET basic :id-1", "GET basic :id-1"}},
	{name: "refresh_token answered is used instead of the password", cred: robotPW,
		answer: func(call string, n int) (int, string) { return http.StatusOK, fmt.Sprintf("rt-%d", n) },
		// a refresh grant's new refresh token replaces the old one
		want: []string{"POST password robot:pw", "POST refresh_token rt-1", "POST refresh_token rt-2"}},
	{name: "refused refresh token: the password once more", cred: robotPW,
		answer: func(call string, n int) (int, string) {
			switch {
			case call == "POST refresh_token rt-1":
				return http.StatusBadRequest, "" // invalid_grant: revoked
			case n == 1:
				return http.StatusOK, "rt-1"
			}
			return http.StatusOK, ""
		},
		want: []string{"POST password robot:pw", "POST refresh_token rt-1", "POST password robot:pw", "POST password robot:pw"}},
	{name: "rotated password: the kept refresh token is dropped", cred: robotPW, rotate: &robotPW2,
		answer: func(call string, n int) (int, string) {
			if n == 1 {
				return http.StatusOK, "rt-1"
			}
			return http.StatusOK, ""
		},
		want: []string{"POST password robot:pw", "POST refresh_token rt-1", "POST password robot:pw2"}},
}

// TestTokenGrants: the token requests the gateway makes for three
// tokens of three scopes in a row (the credentials changing before the
// third when rotate is set): the OAuth2 POST with credentials, GET when
// the service takes no POST, a refresh_token handed out used instead of
// the password until it is refused or the password changes.
func TestTokenGrants(t *testing.T) {
	for _, tt := range tokenGrantCases {
		t.Run(tt.name, func(t *testing.T) { tt.run(t) })
	}
}

// run asks for three tokens, rotating the credentials before the third
// when tt says so, and checks the requests the service saw.
func (tt tokenGrantCase) run(t *testing.T) {
	t.Helper()
	svc := &oauthService{answer: tt.answer}
	src := &rotatingSource{cred: tt.cred}
	c := newTestCacheOf(svc, src)
	for i, scope := range []string{"repository:a:pull", "repository:b:pull", "repository:c:pull"} {
		if i == 2 && tt.rotate != nil {
			src.set(*tt.rotate)
		}
		key := tokenKey{realm: testKey.realm, service: testKey.service, scope: scope}
		if _, _, err := c.get(context.Background(), key); err != nil {
			t.Fatalf("token %d for %s: %v", i+1, scope, err)
		}
	}
	if got := svc.seen(); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
		t.Fatalf("token requests:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
	}
}

// TestTokenPOSTForm: the OAuth2 POST carries what the specification asks:
// grant_type, client_id, service, scope, and for a password grant
// username, password and access_type=offline (to be handed a refresh
// token).
func TestTokenPOSTForm(t *testing.T) {
	svc := &oauthService{}
	c := newTestCacheOf(svc, &rotatingSource{cred: robotPW})
	if _, _, err := c.get(context.Background(), testKey); err != nil {
		t.Fatal(err)
	}
	f := svc.forms[0]
	want := map[string]string{"grant_type": "password", "username": "robot", "password": "pw", "access_type": "offline",
		"client_id": clientID, "service": testKey.service, "scope": testKey.scope}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("form %s = %q, want %q", k, f[k], v)
		}
	}
}

// TestTokenRefusedPasswordGrant: a 401 to the password grant is asked
// again with GET and Basic (services that refuse the grant but take GET);
// when GET is refused too, it is the gateway's credentials refused, and
// the next token is asked with the POST again (a wrong password does not
// turn the service into a GET-only one).
func TestTokenRefusedPasswordGrant(t *testing.T) {
	tests := []struct {
		name       string
		getStatus  int
		wantResult string
		want       []string
	}{
		{name: "GET refused too: refusal", getStatus: http.StatusUnauthorized, wantResult: ResultRefused,
			want: []string{"POST password robot:pw", "GET basic robot:pw", "POST password robot:pw", "GET basic robot:pw"}},
		{name: "GET takes it: GET from then on", getStatus: http.StatusOK, wantResult: ResultFetched,
			want: []string{"POST password robot:pw", "GET basic robot:pw", "GET basic robot:pw"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &oauthService{answer: func(call string, _ int) (int, string) {
				if strings.HasPrefix(call, "POST") {
					return http.StatusUnauthorized, ""
				}
				return tt.getStatus, ""
			}}
			c := newTestCacheOf(svc, &rotatingSource{cred: robotPW})
			for _, scope := range []string{"repository:a:pull", "repository:b:pull"} {
				_, result, err := c.get(context.Background(), tokenKey{realm: testKey.realm, service: testKey.service, scope: scope})
				if result != tt.wantResult || (tt.wantResult == ResultRefused) != errors.As(err, new(*RefusedError)) {
					t.Fatalf("get %s = %s, %v; want %s", scope, result, err, tt.wantResult)
				}
			}
			if got := svc.seen(); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("token requests:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestTokenRealmMustBeHTTPS(t *testing.T) {
	svc := &oauthService{}
	c := newTestCacheOf(svc, &rotatingSource{cred: robotPW})
	_, _, err := c.get(context.Background(), tokenKey{realm: "http://auth.example/token", scope: "repository:a:pull"})
	if !errors.Is(err, ErrTokenService) || len(svc.seen()) != 0 {
		t.Fatalf("an http realm: %v after %d requests; want ErrTokenService before any: Basic credentials would go in the clear", err, len(svc.seen()))
	}
}

func newTestCacheOf(rt http.RoundTripper, src Source) *tokenCache {
	return newTokenCache(&http.Client{Transport: rt}, src, DefaultErrorTTL, DefaultFetchTimeout)
}

// TestBearerRefreshTokenFromPasswordGrant: against docker-registry and a
// token service that hands out refresh tokens, the gateway's second
// scope is asked with the refresh token, not the password.
func TestBearerRefreshTokenFromPasswordGrant(t *testing.T) {
	w := newTokenWorldWith(t, distribution.TokenOptions{RefreshTokens: true})
	w.push(t, "team/app")
	w.push(t, "team/other")
	before := len(w.ts.Grants())
	rt := w.transport(t, nil, false)
	w.mustGet200(t, rt, manifestPath, "")
	w.mustGet200(t, rt, "/v2/team/other/manifests/v1", "")
	if got := w.ts.Grants()[before:]; strings.Join(got, " ") != "password refresh_token" {
		t.Fatalf("grants %q, want password then refresh_token", got)
	}
}

// TestBearerTokenServiceWithoutOAuth: a token service that answers 405
// to POST is asked with GET and Basic, once it said so and from then on.
func TestBearerTokenServiceWithoutOAuth(t *testing.T) {
	w := newTokenWorldWith(t, distribution.TokenOptions{NoOAuth: true})
	want := w.push(t, "team/app")
	w.push(t, "team/other")
	before := len(w.ts.Grants())
	rt := w.transport(t, nil, false)
	got, err := w.pull(t, rt, "team/app")
	if err != nil || got != want {
		t.Fatalf("pull: %s, %v; want %s", got, err, want)
	}
	w.mustGet200(t, rt, "/v2/team/other/manifests/v1", "")
	g := w.ts.Grants()[before:]
	if len(g) < 3 || g[0] != "405" || strings.Trim(strings.Join(g[1:], " "), "basic ") != "" {
		t.Fatalf("grants %q, want one 405 then basic for each scope", g)
	}
}

// TestBearerCatalog: GET /v2/_catalog gets a token for the registry
// catalog scope the registry asks (registry:catalog:*); it used to get
// a token for no scope, which the registry refused.
func TestBearerCatalog(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	rt := w.transport(t, nil, false)
	for range 2 { // the first meets the challenge, the second goes with the cached token
		w.mustGet200(t, rt, "/v2/_catalog", "")
	}
	if n := w.ts.Requests("registry:catalog:*"); n != 1 {
		t.Fatalf("%d tokens asked for registry:catalog:*, want 1", n)
	}
}

func TestCatalogScope(t *testing.T) {
	tests := []struct {
		name, method, challenged, want string
	}{
		{name: "GET as challenged", method: http.MethodGet, challenged: "registry:catalog:*", want: "registry:catalog:*"},
		{name: "HEAD before any challenge", method: http.MethodHead, want: "registry:catalog:*"},
		{name: "another scope asked is not granted", method: http.MethodGet, challenged: "repository:a:pull", want: ""},
		{name: "not for a write", method: http.MethodDelete, challenged: "registry:catalog:*", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest(tt.method, "https://registry.example/v2/_catalog", nil)
			if got := catalogScope(r, tt.challenged); got != tt.want {
				t.Fatalf("catalogScope = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTokenClientBoundsRealmsRemembered is a registry naming ever new
// realms (a hostile or broken one) against a real token service on
// 127.0.0.1: the client remembers at most MaxGrantRealms of them (refresh
// tokens, services that take no POST), and every token is still had.
func TestTokenClientBoundsRealmsRemembered(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/noauth/") {
			http.Error(w, "no OAuth2 here", http.StatusMethodNotAllowed)
			return
		}
		fmt.Fprintf(w, `{"token":"t","refresh_token":"rt-%s"}`, r.URL.Path)
	}))
	defer srv.Close()
	c := newTokenClient(srv.Client())
	const realms = 3 * MaxGrantRealms
	for _, kind := range []string{"noauth", "oauth"} {
		for i := range realms {
			key := tokenKey{realm: fmt.Sprintf("%s/%s/%d", srv.URL, kind, i), service: "s", scope: "repository:a:pull"}
			if _, err := c.fetch(context.Background(), key, robotPW, time.Now()); err != nil {
				t.Fatalf("token of realm %d (%s): %v", i, kind, err)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.getOnly) != MaxGrantRealms || len(c.refresh) != MaxGrantRealms {
		t.Fatalf("remembered %d GET-only realms and %d refresh tokens after %d realms each, want at most %d",
			len(c.getOnly), len(c.refresh), realms, MaxGrantRealms)
	}
}
