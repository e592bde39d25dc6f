package regauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeRegistry is an httptest registry: it accepts "Bearer good" and
// challenges everything else with the realm realmFunc gives for the path.
type fakeRegistry struct {
	srv       *httptest.Server
	realmFunc func(path string) string
	requests  atomic.Int64
	mu        sync.Mutex
	bodies    []string
}

func startFakeRegistry(t *testing.T, p *testPKI, realmFunc func(string) string) *fakeRegistry {
	t.Helper()
	f := &fakeRegistry{realmFunc: realmFunc}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.TLS = p.serverTLS(t, "127.0.0.1")
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRegistry) serve(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	if r.Header.Get("Authorization") == "Bearer good" && !strings.Contains(r.URL.Path, "/evil/") {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="fake",scope="repository:x:pull"`, f.realmFunc(r.URL.Path)))
	w.WriteHeader(http.StatusUnauthorized)
}

func (f *fakeRegistry) host() string { return strings.TrimPrefix(f.srv.URL, "https://") }

// countingServer answers every request with answer and counts them; it
// records the Authorization headers it saw.
type countingServer struct {
	srv   *httptest.Server
	n     atomic.Int64
	mu    sync.Mutex
	auths []string
}

func startCounting(t *testing.T, p *testPKI, tlsOn bool, answer http.HandlerFunc) *countingServer {
	t.Helper()
	c := &countingServer{}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.n.Add(1)
		c.mu.Lock()
		c.auths = append(c.auths, r.Header.Get("Authorization"))
		c.mu.Unlock()
		answer(w, r)
	}))
	if tlsOn {
		c.srv.TLS = p.serverTLS(t, "127.0.0.1")
		c.srv.StartTLS()
	} else {
		c.srv.Start()
	}
	t.Cleanup(c.srv.Close)
	return c
}

func goodToken(w http.ResponseWriter, _ *http.Request) {
	_, _ = io.WriteString(w, `{"token":"good","expires_in":300}`)
}

func newFakeTransport(t *testing.T, p *testPKI, host string, m *Metrics) *Transport {
	t.Helper()
	rt, err := New(p.transport(t), Config{Route: testRoute, Host: host, Source: fixedSource(Credential{Username: testUser, Password: NewSecret(testSecret)}),
		TokenTransport: p.transport(t), Metrics: m, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// fixedSource is a Source that always gives c.
func fixedSource(c Credential) Source {
	return sourceFunc(func(context.Context) (Credential, error) { return c, nil })
}

func send(t *testing.T, rt http.RoundTripper, method, url string, body io.Reader) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

func TestHostileRealmOverPlainHTTPIsNeverAsked(t *testing.T) {
	p := newTestPKI(t)
	plain := startCounting(t, p, false, goodToken)
	good := startCounting(t, p, true, goodToken)
	reg := startFakeRegistry(t, p, func(path string) string {
		if strings.Contains(path, "/evil/") {
			return plain.srv.URL + "/token" // http://: Basic credentials in the clear
		}
		return good.srv.URL + "/token"
	})
	rt := newFakeTransport(t, p, reg.host(), nil)
	for range 5 {
		if _, err := send(t, rt, http.MethodGet, reg.srv.URL+"/v2/evil/manifests/t", nil); !errors.Is(err, ErrTokenService) {
			t.Fatalf("err = %v, want ErrTokenService", err)
		}
		if resp, err := send(t, rt, http.MethodGet, reg.srv.URL+"/v2/x/manifests/t", nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("legitimate request: %v %v", resp, err)
		}
	}
	if n := plain.n.Load(); n != 0 {
		t.Fatalf("the plain-HTTP realm got %d requests", n)
	}
}

func TestHostileTokenNeverSentToAnotherHost(t *testing.T) {
	p := newTestPKI(t)
	tokens := startCounting(t, p, true, goodToken)
	foreign := startCounting(t, p, true, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	reg := startFakeRegistry(t, p, func(string) string { return tokens.srv.URL + "/token" })
	rt := newFakeTransport(t, p, reg.host(), nil)
	if resp, err := send(t, rt, http.MethodGet, reg.srv.URL+"/v2/x/manifests/t", nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("registry request: %v %v", resp, err)
	}
	// A followed redirect (the caller's) and a request naming the
	// registry in Host but another address in the URL.
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, foreign.srv.URL+"/blob", nil)
	req.Header.Set("Authorization", "Bearer node-token")
	if resp, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	} else {
		_ = resp.Body.Close()
	}
	req, _ = http.NewRequestWithContext(testContext(t), http.MethodGet, foreign.srv.URL+"/v2/x/manifests/t", nil)
	req.Host = reg.host()
	if resp, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	} else {
		_ = resp.Body.Close()
	}
	foreign.mu.Lock()
	defer foreign.mu.Unlock()
	if len(foreign.auths) != 2 || foreign.auths[0] != "" || foreign.auths[1] != "" {
		t.Fatalf("the foreign host saw Authorization %q, want none", foreign.auths)
	}
}

func TestHostileChallengeLoopIsBounded(t *testing.T) {
	p := newTestPKI(t)
	tokens := startCounting(t, p, true, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"token":"never-accepted","expires_in":300}`)
	})
	reg := startFakeRegistry(t, p, func(string) string { return tokens.srv.URL + "/token" })
	m := NewMetrics(nil)
	rt := newFakeTransport(t, p, reg.host(), m)
	for range 10 {
		if _, err := send(t, rt, http.MethodGet, reg.srv.URL+"/v2/x/manifests/t", nil); !errors.As(err, new(*RefusedError)) {
			t.Fatalf("err = %v, want a RefusedError", err)
		}
	}
	if n := reg.requests.Load(); n != 20 {
		t.Errorf("the registry got %d requests for 10, want 20 (one retry each)", n)
	}
	if n := tokens.n.Load(); n > 10 {
		t.Errorf("the token service got %d requests for 10, want at most 10", n)
	}
}

func TestHostileBrokenTokenServiceNotHammered(t *testing.T) {
	p := newTestPKI(t)
	tokens := startCounting(t, p, true, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	reg := startFakeRegistry(t, p, func(string) string { return tokens.srv.URL + "/token" })
	m := NewMetrics(nil)
	rt := newFakeTransport(t, p, reg.host(), m)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if _, err := send(t, rt, http.MethodGet, reg.srv.URL+"/v2/x/manifests/t", nil); !errors.Is(err, ErrTokenService) {
				t.Errorf("err = %v, want ErrTokenService", err)
			}
		})
	}
	wg.Wait()
	if n := tokens.n.Load(); n != 1 {
		t.Fatalf("a broken token service got %d requests from 100, want 1", n)
	}
	if e := testutil.ToFloat64(m.tokens.WithLabelValues(testRoute, ResultError)); e != 100 {
		t.Fatalf("error = %v, want 100", e)
	}
}

func TestHostileHugeTokenAnswer(t *testing.T) {
	p := newTestPKI(t)
	tokens := startCounting(t, p, true, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"token":"`+strings.Repeat("a", 4<<20)+`"}`)
	})
	reg := startFakeRegistry(t, p, func(string) string { return tokens.srv.URL + "/token" })
	rt := newFakeTransport(t, p, reg.host(), nil)
	_, err := send(t, rt, http.MethodGet, reg.srv.URL+"/v2/x/manifests/t", nil)
	if !errors.Is(err, ErrTokenService) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v, want the bound", err)
	}
}

func TestRetryReplaysTheBody(t *testing.T) {
	p := newTestPKI(t)
	tokens := startCounting(t, p, true, goodToken)
	reg := startFakeRegistry(t, p, func(string) string { return tokens.srv.URL + "/token" })
	rt := newFakeTransport(t, p, reg.host(), nil)
	// strings.Reader: NewRequest sets GetBody, so the retry has the body.
	if resp, err := send(t, rt, http.MethodPut, reg.srv.URL+"/v2/x/manifests/t", strings.NewReader("manifest")); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	reg.mu.Lock()
	bodies := append([]string(nil), reg.bodies...)
	reg.mu.Unlock()
	if len(bodies) != 2 || bodies[0] != "manifest" || bodies[1] != "manifest" {
		t.Fatalf("the registry got bodies %q, want the body twice", bodies)
	}
}

func TestNoRetryWithoutGetBody(t *testing.T) {
	p := newTestPKI(t)
	tokens := startCounting(t, p, true, goodToken)
	reg := startFakeRegistry(t, p, func(string) string { return tokens.srv.URL + "/token" })
	rt := newFakeTransport(t, p, reg.host(), nil)
	stream := func() io.Reader { return io.MultiReader(strings.NewReader("chunk")) } // no GetBody
	resp, err := send(t, rt, http.MethodPatch, reg.srv.URL+"/v2/x/blobs/uploads/u", stream())
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a body that cannot be sent again: %v %v, want the 401 passed on", resp, err)
	}
	// The challenge is known now: the next one goes with a token at once.
	if resp, err := send(t, rt, http.MethodPatch, reg.srv.URL+"/v2/x/blobs/uploads/u", stream()); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the next PATCH: %v %v", resp, err)
	}
	if n := reg.requests.Load(); n != 2 {
		t.Errorf("the registry got %d requests, want 2", n)
	}
}

func TestRepositoryFuncDecidesTheScope(t *testing.T) {
	p := newTestPKI(t)
	scopes := make(chan string, 4)
	tokens := startCounting(t, p, true, func(w http.ResponseWriter, r *http.Request) {
		scopes <- r.URL.Query().Get("scope")
		goodToken(w, r)
	})
	reg := startFakeRegistry(t, p, func(string) string { return tokens.srv.URL + "/token" })
	rt, err := New(p.transport(t), Config{Route: testRoute, Host: reg.host(), TokenTransport: p.transport(t),
		RepositoryFunc: func(*http.Request) string { return "parsed/by-the-chain" }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := send(t, rt, http.MethodGet, reg.srv.URL+"/v2/x/manifests/t", nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	// The challenge asked repository:x:pull, which is not the chain's
	// repository: the request's own scope is asked instead.
	if got := <-scopes; got != "repository:parsed/by-the-chain:pull" {
		t.Fatalf("token asked for %q", got)
	}
}
