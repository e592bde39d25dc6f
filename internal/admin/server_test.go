package admin

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHealthAndMethods(t *testing.T) {
	_, addr := startServer(t, Config{}, "127.0.0.1:0")
	tests := []struct {
		name, method, path string
		wantCode           int
		wantBody           string // exact body of a 200, or a substring of the JSON error
		wantAllow          string
	}{
		{name: "healthz", method: "GET", path: "/healthz", wantCode: 200, wantBody: "ok\n"},
		{name: "healthz HEAD", method: "HEAD", path: "/healthz", wantCode: 200, wantBody: ""},
		{name: "readyz without ReadyFunc", method: "GET", path: "/readyz", wantCode: 200, wantBody: "ready\n"},
		{name: "healthz POST", method: "POST", path: "/healthz", wantCode: 405, wantBody: "method POST not allowed", wantAllow: "GET, HEAD"},
		{name: "readyz DELETE", method: "DELETE", path: "/readyz", wantCode: 405, wantAllow: "GET, HEAD"},
		{name: "metrics POST", method: "POST", path: "/metrics", wantCode: 405, wantAllow: "GET, HEAD"},
		{name: "list PUT", method: "PUT", path: "/api/upstreams", wantCode: 405, wantAllow: "GET, HEAD"},
		{name: "set GET", method: "GET", path: "/api/upstreams/registry/10.1.0.10:443", wantCode: 405, wantAllow: "POST"},
		{name: "set DELETE", method: "DELETE", path: "/api/upstreams/registry/10.1.0.10:443", wantCode: 405, wantAllow: "POST"},
		{name: "unknown path", method: "GET", path: "/nope", wantCode: 404, wantBody: "no endpoint /nope"},
		{name: "route without upstream", method: "POST", path: "/api/upstreams/registry", wantCode: 404, wantBody: "POST /api/upstreams/{route}/{upstream}"},
		{name: "too many segments", method: "POST", path: "/api/upstreams/a/b/c", wantCode: 404},
		{name: "metrics without Gatherer", method: "GET", path: "/metrics", wantCode: 404, wantBody: "metrics are not enabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, tt.method, addr, tt.path, "", "")
			if a.code != tt.wantCode {
				t.Fatalf("code = %d, want %d; body %q", a.code, tt.wantCode, a.body)
			}
			if got := a.header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			if tt.wantCode == 200 {
				if a.body != tt.wantBody {
					t.Errorf("body = %q, want %q", a.body, tt.wantBody)
				}
				return
			}
			if msg := a.jsonError(t); !strings.Contains(msg, tt.wantBody) {
				t.Errorf("error %q does not contain %q", msg, tt.wantBody)
			}
		})
	}
}

func TestReadyzFlips(t *testing.T) {
	var ready atomic.Bool
	_, addr := startServer(t, Config{ReadyFunc: ready.Load}, "127.0.0.1:0")
	steps := []struct {
		name     string
		ready    bool
		wantCode int
		wantBody string
	}{
		{"before the listeners are up", false, 503, "not ready: starting\n"},
		{"listeners up", true, 200, "ready\n"},
		{"draining after SIGTERM", false, 503, "not ready: draining\n"},
		{"ready again", true, 200, "ready\n"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			ready.Store(st.ready)
			a := call(t, "GET", addr, "/readyz", "", "")
			if a.code != st.wantCode || a.body != st.wantBody {
				t.Errorf("got %d %q, want %d %q", a.code, a.body, st.wantCode, st.wantBody)
			}
		})
	}
}

func TestMetricsEndpoint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "snigate_test_events_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	_, addr := startServer(t, Config{Gatherer: reg, Metrics: NewMetrics(reg)}, "127.0.0.1:0")

	call(t, "GET", addr, "/healthz", "", "")
	a := call(t, "GET", addr, "/metrics", "", "")
	if a.code != 200 {
		t.Fatalf("code = %d, body %q", a.code, a.body)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want the Prometheus text format", ct)
	}
	for _, want := range []string{
		"snigate_test_events_total 3\n",
		`snigate_admin_requests_total{code="200",handler="/healthz"} 1` + "\n",
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("metrics lack %q:\n%s", want, a.body)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.stateChanged("registry", "drain")
	m.DeleteRoute("registry")
	if h := m.instrument("/x", nil); h != nil {
		t.Errorf("nil Metrics wrapped the handler")
	}
}

func TestServeReturnsNilAfterShutdown(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{})
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	if a := call(t, "GET", ln.Addr().String(), "/healthz", "", ""); a.code != 200 {
		t.Fatalf("healthz = %d", a.code)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve after Shutdown = %v, want nil", err)
	}
}

// TestReadyzSaysWhatTheGatewayDoes: with NotReadyFunc, /readyz names what
// the gateway is doing (a process started by SIGUSR2 taking over) instead
// of guessing "starting" or "draining" from what /readyz itself saw.
func TestReadyzSaysWhatTheGatewayDoes(t *testing.T) {
	const why = "starting: taking over the listening sockets from the previous process (SIGUSR2 upgrade), which serves until this one is ready"
	_, addr := startServer(t, Config{ReadyFunc: func() bool { return false }, NotReadyFunc: func() string { return why }}, "127.0.0.1:0")
	a := call(t, "GET", addr, "/readyz", "", "")
	if a.code != 503 || a.body != "not ready: "+why+"\n" {
		t.Errorf("got %d %q, want 503 %q", a.code, a.body, "not ready: "+why+"\n")
	}
}
