package main

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The bench registry's token auth (issue 30): `loadgen upstream
// -http-auth ADDR -token ADDR` serves the same registry behind the
// distribution token flow. A request without a valid bearer token gets
// 401 with WWW-Authenticate: Bearer realm=https://TOKEN/token,
// service=bench-registry, scope=repository:NAME:pull; the token service
// (no client certificate, as token services are reached) answers GET
// with Basic credentials and the OAuth2 POST password grant with a
// random token valid for authTokenLife. -http-auth is mTLS like -http;
// -http-auth-plain serves the same without client certificates, for
// distribution's proxy mode (which presents none). Checking a token is a
// map lookup, cheaper than a real registry's JWT signature check.
const (
	authUser      = "bench"
	authPassword  = "bench-Passw0rd"
	authService   = "bench-registry"
	authTokenLife = 300 // seconds
)

// authGate holds the issued tokens and counts what it was asked.
type authGate struct {
	realm  string
	mu     sync.Mutex
	tokens map[string]time.Time // token -> expiry

	tokenRequests atomic.Int64 // token service requests (any answer)
	registryReqs  atomic.Int64 // registry requests (any answer)
	challenged    atomic.Int64 // registry requests answered 401
}

// authStats is what GET /stats on the token listener answers.
type authStats struct {
	TokenRequests int64 `json:"token_requests"`
	RegistryReqs  int64 `json:"registry_requests"`
	Challenged    int64 `json:"challenged"`
}

// wrap puts reg behind the bearer check.
func (g *authGate) wrap(reg http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.registryReqs.Add(1)
		if !g.valid(r.Header.Get("Authorization")) {
			g.challenged.Add(1)
			scope := ""
			if repo, _, _, ok := parseAPIPath(r.URL.Path); ok {
				scope = fmt.Sprintf(",scope=%q", "repository:"+repo+":pull")
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q,service=%q%s", g.realm, authService, scope))
			ociError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
			return
		}
		reg.ServeHTTP(w, r)
	})
}

func (g *authGate) valid(h string) bool {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.tokens[tok]
	return ok && time.Now().Before(exp)
}

// serveToken is the token service: GET with Basic, POST password grant.
func (g *authGate) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/stats" {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(authStats{g.tokenRequests.Load(), g.registryReqs.Load(), g.challenged.Load()})
		return
	}
	g.tokenRequests.Add(1)
	user, pass, _ := r.BasicAuth()
	if r.Method == http.MethodPost {
		r.ParseForm()
		if r.PostForm.Get("grant_type") != "password" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		user, pass = r.PostForm.Get("username"), r.PostForm.Get("password")
	}
	if user != authUser || pass != authPassword {
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	g.mu.Lock()
	g.tokens[tok] = time.Now().Add(authTokenLife * time.Second)
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"token": tok, "access_token": tok, "expires_in": authTokenLife})
}

// startAuthRegistry serves reg behind the token flow on mtlsAt (client
// certificates required, as -http) and plainAt (none asked), with the
// token service on tokenAt; empty addresses serve nothing.
func startAuthRegistry(mtlsAt, plainAt, tokenAt string, p *material, reg *registry, stats *upstreamStats) ([]net.Listener, error) {
	if tokenAt == "" || mtlsAt == "" && plainAt == "" {
		return nil, nil
	}
	tl, err := net.Listen("tcp", tokenAt)
	if err != nil {
		return nil, err
	}
	g := &authGate{realm: "https://" + tl.Addr().String() + "/token", tokens: map[string]time.Time{}}
	lns := []net.Listener{tl}
	serve := func(ln net.Listener, h http.Handler, cfg *tls.Config) {
		srv := &http.Server{Handler: h, TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 10 * time.Minute,
			ErrorLog: log.New(os.Stderr, "auth registry: ", log.LstdFlags)}
		go srv.ServeTLS(ln, "", "")
	}
	serve(tl, http.HandlerFunc(g.serveToken), &tls.Config{Certificates: []tls.Certificate{p.upstream}, NextProtos: []string{"h2", "http/1.1"}})
	for _, a := range []struct {
		at   string
		mtls bool
	}{{mtlsAt, true}, {plainAt, false}} {
		if a.at == "" {
			continue
		}
		ln, err := net.Listen("tcp", a.at)
		if err != nil {
			closeListeners(lns)
			return nil, err
		}
		lns = append(lns, ln)
		cfg := newRegistryServer(p, reg, stats).TLSConfig
		if !a.mtls {
			cfg = &tls.Config{Certificates: []tls.Certificate{p.upstream}, NextProtos: []string{"h2", "http/1.1"}}
		}
		serve(ln, g.wrap(reg), cfg)
	}
	return lns, nil
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}
