package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/testnet"
	"github.com/snigate/snigate/upstream"
)

// fakeUpstreams is an in-memory gateway: routes of upstreams with states.
type fakeUpstreams struct {
	mu  sync.Mutex
	st  []upstream.Status
	err error // returned by SetUpstreamState when set
}

var _ upstreamAPI = (*fakeUpstreams)(nil)

func newFake() *fakeUpstreams {
	return &fakeUpstreams{st: []upstream.Status{
		{Route: "registry", Upstream: "10.1.0.10:443", State: upstream.StateReady, Healthy: true, ActiveConnections: 2,
			LastCheck: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)},
		{Route: "registry", Upstream: "registry-2.internal:443", State: upstream.StateDrain, LastError: "dial tcp: i/o timeout"},
		{Route: "registry", Upstream: "[2001:db8::1]:443", State: upstream.StateMaint},
		{Route: "mirror", Upstream: "10.2.0.1:443", State: upstream.StateReady, Healthy: true},
	}}
}

func (f *fakeUpstreams) Upstreams() []upstream.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.st == nil {
		return nil
	}
	return append([]upstream.Status(nil), f.st...)
}

func (f *fakeUpstreams) SetUpstreamState(route, addr string, s upstream.State) (upstream.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return upstream.Status{}, f.err
	}
	knownRoute := false
	for i := range f.st {
		if f.st[i].Route != route {
			continue
		}
		knownRoute = true
		if f.st[i].Upstream == addr {
			f.st[i].State = s
			return f.st[i], nil
		}
	}
	if !knownRoute {
		return upstream.Status{}, fmt.Errorf("route %q: %w", route, ErrNotFound)
	}
	return upstream.Status{}, fmt.Errorf("route %q upstream %q: %w", route, addr, upstream.ErrUnknownUpstream)
}

func (f *fakeUpstreams) state(route, addr string) upstream.State {
	for _, s := range f.Upstreams() {
		if s.Route == route && s.Upstream == addr {
			return s.State
		}
	}
	return ""
}

// startServer serves cfg on addr ("127.0.0.1:0" or "unix:/path") until the
// test ends and returns the listener's address in the form Listen takes.
func startServer(t *testing.T, cfg Config, addr string) (*Server, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	if ln.Addr().Network() == "unix" {
		return s, UnixPrefix + ln.Addr().String()
	}
	return s, ln.Addr().String()
}

// testClient keeps no idle connections, so no goroutine outlives a test.
var testClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

type answer struct {
	code   int
	header http.Header
	body   string
}

// call sends one request to the server at addr (host:port) and reads the answer.
func call(t *testing.T, method, addr, path, contentType, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{code: resp.StatusCode, header: resp.Header, body: string(data)}
}

// jsonError returns the message of an error answer, failing the test when
// the body is not {"error": "..."}.
func (a answer) jsonError(t *testing.T) string {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var eb errorBody
	if err := json.Unmarshal([]byte(a.body), &eb); err != nil || eb.Error == "" {
		t.Fatalf("body %q is not a JSON error: %v", a.body, err)
	}
	return eb.Error
}

// freeAddr returns a TCP address on which nothing listens and that no
// other socket can take while the test runs (testnet.ClosedAddr).
func freeAddr(t *testing.T) string {
	t.Helper()
	return testnet.ClosedAddr(t)
}
