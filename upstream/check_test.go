package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// tlsCheckCase is a server and a client configuration and what the TLS
// check says of them.
type tlsCheckCase struct {
	name    string
	server  *tls.Config
	client  *tls.Config
	wantErr string // "" passes
}

// clientCertDemandedCases: a server demanding a client certificate, sent
// or not, over TLS 1.2 and 1.3.
func clientCertDemandedCases(pki *testPKI) []tlsCheckCase {
	return []tlsCheckCase{
		{
			name:    "client certificate demanded, none sent, TLS 1.3",
			server:  serverConfig(pki.server, pki.ca.pool, tls.VersionTLS13),
			client:  pki.clientConfig(nil),
			wantErr: "certificate required",
		},
		{
			name:    "client certificate demanded, none sent, TLS 1.2",
			server:  serverConfig(pki.server, pki.ca.pool, tls.VersionTLS12),
			client:  pki.clientConfig(nil),
			wantErr: "handshake failure (the upstream refused our client certificate",
		},
		{
			name:   "client certificate demanded and sent, TLS 1.3",
			server: serverConfig(pki.server, pki.ca.pool, tls.VersionTLS13),
			client: pki.clientConfig(&pki.client),
		},
		{
			name:   "client certificate demanded and sent, TLS 1.2",
			server: serverConfig(pki.server, pki.ca.pool, tls.VersionTLS12),
			client: pki.clientConfig(&pki.client),
		},
		{
			name:    "client certificate from a CA the server does not trust",
			server:  serverConfig(pki.server, pki.ca.pool, tls.VersionTLS13),
			client:  pki.clientConfig(&pki.otherClient),
			wantErr: "certificate required", // the server's list of acceptable CAs rules ours out, so none is sent
		},
	}
}

// tlsPolicyCases: the server's own verification, session tickets and the
// server certificate's CA and names.
func tlsPolicyCases(pki *testPKI) []tlsCheckCase {
	return []tlsCheckCase{
		{
			name: "client certificate sent and refused by the server's own verification, TLS 1.3",
			server: func() *tls.Config {
				c := serverConfig(pki.server, nil, tls.VersionTLS13)
				c.ClientAuth = tls.RequireAnyClientCert
				c.VerifyPeerCertificate = func([][]byte, [][]*x509.Certificate) error { return errors.New("revoked") }
				return c
			}(),
			client:  pki.clientConfig(&pki.client),
			wantErr: "bad certificate (the upstream refused our client certificate",
		},
		{
			name: "client certificate accepted by a server that sends no session tickets",
			server: func() *tls.Config {
				c := serverConfig(pki.server, pki.ca.pool, tls.VersionTLS13)
				c.SessionTicketsDisabled = true
				return c
			}(),
			client: pki.clientConfig(&pki.client),
		},
		{
			name: "client certificate missing, server sends no session tickets",
			server: func() *tls.Config {
				c := serverConfig(pki.server, pki.ca.pool, tls.VersionTLS13)
				c.SessionTicketsDisabled = true
				return c
			}(),
			client:  pki.clientConfig(nil),
			wantErr: "certificate required",
		},
		{
			name:    "server certificate from a CA we do not trust",
			server:  serverConfig(pki.otherServer, nil, 0),
			client:  pki.clientConfig(&pki.client),
			wantErr: "set upstream_tls.ca",
		},
		{
			name:   "server name not in the server certificate",
			server: serverConfig(pki.server, nil, 0),
			client: func() *tls.Config {
				c := pki.clientConfig(nil)
				c.ServerName = "other.example.test"
				return c
			}(),
			wantErr: "set upstream_tls.server_name",
		},
		{
			name:   "no client certificate asked",
			server: serverConfig(pki.server, nil, 0),
			client: pki.clientConfig(&pki.client),
		},
	}
}

func TestTLSCheck(t *testing.T) {
	pki := newPKI(t)
	tests := append(clientCertDemandedCases(pki), tlsPolicyCases(pki)...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := startUpstream(t, tt.server)
			p := mustPool(t, Config{
				Addrs:         []string{u.addr},
				Check:         Check{Kind: CheckTLS, Fall: 1, Timeout: 10 * time.Second},
				TLSConfigFunc: func() *tls.Config { return tt.client },
			})
			for round := range 2 { // the second round may resume the session
				rounds(p, 1)
				st := p.Status()[0]
				if tt.wantErr == "" && (!st.Healthy || st.LastError != "") {
					t.Fatalf("round %d: healthy=%v err=%q, want the check to pass", round+1, st.Healthy, st.LastError)
				}
				if tt.wantErr != "" && (st.Healthy || !strings.Contains(st.LastError, tt.wantErr)) {
					t.Fatalf("round %d: healthy=%v err=%q, want a failure containing %q", round+1, st.Healthy, st.LastError, tt.wantErr)
				}
			}
		})
	}
}

// TestTLSCheckDoesNotTouchTheTemplate: the checks clone the configuration
// real connections use; hooking it in place would leak the health check's
// session cache and callbacks into traffic.
func TestTLSCheckDoesNotTouchTheTemplate(t *testing.T) {
	pki := newPKI(t)
	u := startUpstream(t, serverConfig(pki.server, pki.ca.pool, 0))
	tmpl := pki.clientConfig(&pki.client)
	p := mustPool(t, Config{
		Addrs:         []string{u.addr},
		Check:         Check{Kind: CheckTLS},
		TLSConfigFunc: func() *tls.Config { return tmpl },
	})
	rounds(p, 1)
	if tmpl.ClientSessionCache != nil || tmpl.GetClientCertificate != nil || tmpl.VerifyConnection != nil {
		t.Fatal("the check modified the client configuration of real connections")
	}
}

func TestHTTPCheck(t *testing.T) {
	pki := newPKI(t)
	tests := []struct {
		name    string
		status  int
		check   Check
		cert    *tls.Certificate
		wantErr string
	}{
		{name: "401 within the default 200 and 401", status: 401, cert: &pki.client},
		{name: "200 within the default", status: 200, cert: &pki.client},
		{name: "503 outside", status: 503, cert: &pki.client, wantErr: "status 503, want one of [200 401]"},
		{name: "204 within a custom list", status: 204, check: Check{ExpectStatus: []int{204}}, cert: &pki.client},
		{name: "200 outside a custom list", status: 200, check: Check{ExpectStatus: []int{204}}, cert: &pki.client, wantErr: "status 200"},
		{name: "no client certificate", status: 200, wantErr: "certificate required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotHost, gotPath string
			u := startUpstream(t, serverConfig(pki.server, pki.ca.pool, 0))
			u.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotHost, gotPath = r.Host, r.URL.RequestURI()
				w.WriteHeader(tt.status)
			})
			check := tt.check
			check.Kind, check.Fall, check.Path = CheckHTTP, 1, "/v2/?probe=1"
			p := mustPool(t, Config{
				Addrs:         []string{u.addr},
				Check:         check,
				TLSConfigFunc: func() *tls.Config { return pki.clientConfig(tt.cert) },
			})
			rounds(p, 1)
			st := p.Status()[0]
			if tt.wantErr == "" && !st.Healthy {
				t.Fatalf("check failed: %s", st.LastError)
			}
			if tt.wantErr != "" && (st.Healthy || !strings.Contains(st.LastError, tt.wantErr)) {
				t.Fatalf("healthy=%v err=%q, want a failure containing %q", st.Healthy, st.LastError, tt.wantErr)
			}
			if tt.wantErr == "" && (gotHost != testServerName || gotPath != "/v2/?probe=1") {
				t.Errorf("request Host %q path %q, want %q and /v2/?probe=1", gotHost, gotPath, testServerName)
			}
		})
	}
}

func TestCheckTimeout(t *testing.T) {
	// A server that accepts TCP but never answers the handshake.
	u := startUpstream(t, serverConfig(newPKI(t).server, nil, 0))
	u.stop()
	ln := listenSilent(t, u.addr)
	p := mustPool(t, Config{
		Addrs: []string{ln},
		Check: Check{Kind: CheckTLS, Fall: 1, Timeout: 50 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p.CheckOnce(ctx)
	if st := p.Status()[0]; st.Healthy || !strings.Contains(st.LastError, "deadline exceeded") && !strings.Contains(st.LastError, "timeout") {
		t.Fatalf("status %+v: want a timeout failure", st)
	}
}

// recordingCache is a session cache that remembers the keys it was asked
// for and given.
type recordingCache struct {
	tls.ClientSessionCache
	mu         sync.Mutex
	puts, hits []string
}

func (c *recordingCache) Get(k string) (*tls.ClientSessionState, bool) {
	cs, ok := c.ClientSessionCache.Get(k)
	if ok {
		c.mu.Lock()
		c.hits = append(c.hits, k)
		c.mu.Unlock()
	}
	return cs, ok
}

func (c *recordingCache) Put(k string, cs *tls.ClientSessionState) {
	c.mu.Lock()
	c.puts = append(c.puts, k)
	c.mu.Unlock()
	c.ClientSessionCache.Put(k, cs)
}

// TestTLSCheckSharesTheTemplatesSessionCache: a bridge route's template
// carries a session cache scoped to the client certificate and trust in
// force (certs.ClientTLS); checks used a cache of their own, so they went
// on resuming sessions made with a rotated-out certificate. They now store
// and resume their sessions in the template's cache, keyed by address
// and server name as bridged traffic keys them.
func TestTLSCheckSharesTheTemplatesSessionCache(t *testing.T) {
	pki := newPKI(t)
	u := startUpstream(t, serverConfig(pki.server, pki.ca.pool, 0))
	cache := &recordingCache{ClientSessionCache: tls.NewLRUClientSessionCache(8)}
	p := mustPool(t, Config{
		Addrs: []string{u.addr},
		Check: Check{Kind: CheckTLS},
		TLSConfigFunc: func() *tls.Config {
			c := pki.clientConfig(&pki.client)
			c.ClientSessionCache = cache
			return c
		},
	})
	rounds(p, 2)
	if st := p.Status()[0]; !st.Healthy {
		t.Fatalf("check failed: %s", st.LastError)
	}
	cache.mu.Lock()
	defer cache.mu.Unlock()
	want := u.addr + " " + pki.clientConfig(nil).ServerName
	if len(cache.puts) == 0 || cache.puts[0] != want {
		t.Fatalf("sessions stored under %q, want %q", cache.puts, want)
	}
	if len(cache.hits) == 0 {
		t.Fatal("the second check did not resume the first one's session from the template's cache")
	}
}
