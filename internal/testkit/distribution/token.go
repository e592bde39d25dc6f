package distribution

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TokenOptions configures NewTokenService.
type TokenOptions struct {
	TLS             *tls.Config       // the service's server configuration (required)
	Listener        net.Listener      // where it serves; a new 127.0.0.1:0 listener if nil
	Realm           string            // the realm registries challenge with; https://localhost:PORT/token if empty
	Issuer, Service string            // the tokens' iss and aud; "test-issuer", "test-registry" if empty
	Users           map[string]string // username -> password for Basic credentials
	RefuseAnonymous bool              // no credentials: 401, not a token for pull of public/
	ExpiresIn       int               // seconds; 300 if zero
	SignerName      string            // the signing certificate's common name; "token signer" if empty
	HTTP2           bool              // offer h2 as well as http/1.1
	// NoOAuth makes the service answer every POST with 405, as token
	// services that implement only the GET of the token specification do.
	NoOAuth bool
	// RefreshTokens makes a POST grant_type=password with
	// access_type=offline answer a refresh_token as well (OAuth2 token
	// specification), a new one each time.
	RefreshTokens bool
}

// TokenService answers GET with Basic credentials (or none: pull of
// public/ repositories only) or POST grant_type=refresh_token or
// grant_type=password with an ES256 JWT whose x5c certificate the
// registry trusts (rootcertbundle), granting the access the scopes ask.
// It counts requests per scope and records each request's grant.
type TokenService struct {
	o        TokenOptions
	srv      *http.Server
	addr     net.Addr
	certFile string

	mu       sync.Mutex
	key      *ecdsa.PrivateKey
	cert     *x509.Certificate
	users    map[string]string // username -> password
	refresh  map[string]string // refresh token -> username
	counts   map[string]int    // scope -> requests
	subjects []string          // who each request was for
	grants   []string          // each request's grant: anonymous, basic, password, refresh_token, 405
	issued   int               // refresh tokens handed out
	pastExp  int               // the next n tokens are already expired for the registry
}

// NewTokenService starts a token service; the test's cleanup stops it.
func NewTokenService(tb testing.TB, o TokenOptions) *TokenService {
	tb.Helper()
	o = tokenDefaults(o)
	ts := &TokenService{o: o, users: map[string]string{}, refresh: map[string]string{}, counts: map[string]int{}}
	for u, p := range o.Users {
		ts.users[u] = p
	}
	ts.certFile = ts.RotateKey(tb)
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			tb.Fatal(err)
		}
	}
	ts.addr = ln.Addr()
	ts.srv = &http.Server{Handler: http.HandlerFunc(ts.serveToken), TLSConfig: o.TLS, ReadHeaderTimeout: StartLimit}
	if !o.HTTP2 {
		ts.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){} // http/1.1 only
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = ts.srv.ServeTLS(ln, "", "") }()
	tb.Cleanup(func() { _ = ts.srv.Close(); <-done })
	return ts
}

func tokenDefaults(o TokenOptions) TokenOptions {
	if o.Issuer == "" {
		o.Issuer = "test-issuer"
	}
	if o.Service == "" {
		o.Service = "test-registry"
	}
	if o.ExpiresIn == 0 {
		o.ExpiresIn = 300
	}
	if o.SignerName == "" {
		o.SignerName = "token signer"
	}
	return o
}

// Realm is the URL registries challenge with. By default it names
// localhost, not 127.0.0.1: go-containerregistry refuses realms on
// loopback addresses.
func (ts *TokenService) Realm() string {
	if ts.o.Realm != "" {
		return ts.o.Realm
	}
	_, port, _ := net.SplitHostPort(ts.addr.String())
	return "https://localhost:" + port + "/token"
}

// Issuer and Service are the tokens' iss and aud.
func (ts *TokenService) Issuer() string  { return ts.o.Issuer }
func (ts *TokenService) Service() string { return ts.o.Service }

// ExpiresIn is the tokens' lifetime.
func (ts *TokenService) ExpiresIn() time.Duration { return time.Duration(ts.o.ExpiresIn) * time.Second }

// CertFile is the first signing certificate (PEM), the registry's
// rootcertbundle.
func (ts *TokenService) CertFile() string { return ts.certFile }

// AuthYAML is docker-registry's auth section (its body) for this service.
func (ts *TokenService) AuthYAML() string {
	return "  token:\n    realm: " + ts.Realm() + "\n    service: " + ts.o.Service + "\n    issuer: " + ts.o.Issuer + "\n    rootcertbundle: " + ts.certFile
}

// SetUser adds user or changes its password.
func (ts *TokenService) SetUser(user, password string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.users[user] = password
}

// AddRefreshToken makes token a refresh token of user.
func (ts *TokenService) AddRefreshToken(token, user string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.refresh[token] = user
}

// ExpireNext makes the next n tokens already expired for the registry.
func (ts *TokenService) ExpireNext(n int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.pastExp = n
}

// Requests is how many tokens were asked for scope (the request's scopes
// joined by a space).
func (ts *TokenService) Requests(scope string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.counts[scope]
}

// Total is how many tokens were asked for, any scope.
func (ts *TokenService) Total() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, c := range ts.counts {
		n += c
	}
	return n
}

// Subjects is who each request was for ("" for anonymous), in order.
func (ts *TokenService) Subjects() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.subjects...)
}

func (ts *TokenService) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && ts.o.NoOAuth {
		ts.record("405", "")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	user, grant, ok := ts.authenticate(r)
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	scopes := q["scope"]
	ts.mu.Lock()
	ts.counts[strings.Join(scopes, " ")]++
	past := ts.pastExp > 0
	if past {
		ts.pastExp--
	}
	ts.subjects = append(ts.subjects, user)
	ts.grants = append(ts.grants, grant)
	key, cert := ts.key, ts.cert
	ts.mu.Unlock()
	if !ok || q.Get("service") != ts.o.Service {
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return
	}
	jwt := ts.sign(key, cert, user, access(scopes, user), past)
	reply := map[string]any{"token": jwt, "access_token": jwt, "expires_in": ts.o.ExpiresIn,
		"issued_at": time.Now().UTC().Format(time.RFC3339)}
	if grant == "password" && ts.o.RefreshTokens && q.Get("access_type") == "offline" {
		reply["refresh_token"] = ts.issueRefreshToken(user)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// record notes a request the service did not take.
func (ts *TokenService) record(grant, user string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.grants = append(ts.grants, grant)
	ts.subjects = append(ts.subjects, user)
}

// issueRefreshToken makes a new refresh token of user.
func (ts *TokenService) issueRefreshToken(user string) string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.issued++
	t := fmt.Sprintf("issued-refresh-%d-%s", ts.issued, user)
	ts.refresh[t] = user
	return t
}

// Grants is each request's grant, in order: "anonymous", "basic" (GET),
// "password", "refresh_token" (POST), "405" (a POST refused by NoOAuth),
// "" (a POST of another grant).
func (ts *TokenService) Grants() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.grants...)
}

// authenticate returns who r is: a Basic user, a password grant's user, a
// refresh token's user, or "" for anonymous; the grant it used; ok is
// false for wrong credentials (or anonymous when refused).
func (ts *TokenService) authenticate(r *http.Request) (user, grant string, ok bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if r.Method == http.MethodPost {
		if r.ParseForm() != nil || r.PostForm.Get("client_id") == "" {
			return "", "", false
		}
		switch f := r.PostForm; f.Get("grant_type") {
		case "refresh_token":
			u, ok := ts.refresh[f.Get("refresh_token")]
			return u, "refresh_token", ok
		case "password":
			want, known := ts.users[f.Get("username")]
			return f.Get("username"), "password", known && want == f.Get("password")
		}
		return "", "", false
	}
	u, p, hasBasic := r.BasicAuth()
	if !hasBasic {
		return "", "anonymous", !ts.o.RefuseAnonymous
	}
	want, known := ts.users[u]
	return u, "basic", known && want == p
}
