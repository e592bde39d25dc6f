package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRuntime is the gateway side of the maintenance endpoints.
type fakeRuntime struct {
	mu       sync.Mutex
	reloadOK bool
	reloads  int
	switchOn atomic.Bool
}

var _ runtimeAPI = (*fakeRuntime)(nil)

var testExpiry = time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)

func (f *fakeRuntime) Routes() []Route {
	return []Route{
		{Route: "registry", Names: []string{"registry.example.com"}, Mode: "bridge", Balance: "roundrobin",
			Upstreams: []string{"10.1.0.10:443"}, Cert: &Cert{Source: "file", Subject: "CN=registry.example.com", NotAfter: testExpiry}},
		{Route: "mirror", Names: []string{"mirror.example.com"}, Mode: "splice", Balance: "leastconn",
			Upstreams: []string{"10.2.0.1:443"}, Default: true},
	}
}

func (f *fakeRuntime) ConfigStatus() ConfigStatus {
	return ConfigStatus{File: "/etc/snigate/snigate.yaml", SHA256: "ab", Routes: 2}
}

func (f *fakeRuntime) ReloadConfig(_ context.Context, reason string) ReloadResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	if f.reloadOK {
		return ReloadResult{Result: ReloadSuccess, Reason: reason}
	}
	return ReloadResult{Result: ReloadFailure, Reason: reason, Errors: []string{
		`snigate.yaml:13: routes[0].health.interval: want a duration such as "3s", got "3"`,
	}}
}

func (f *fakeRuntime) SetReadySwitch(on bool) { f.switchOn.Store(on) }

func startRuntime(t *testing.T, rt *fakeRuntime, pprof bool) string {
	t.Helper()
	rt.switchOn.Store(true)
	_, addr := startServer(t, Config{
		Runtime:   rt,
		ReadyFunc: rt.switchOn.Load,
		PprofFunc: func() bool { return pprof },
	}, "127.0.0.1:0")
	return addr
}

func TestRuntimeEndpoints(t *testing.T) {
	tests := []struct {
		name     string
		reloadOK bool
		method   string
		path     string
		body     string
		wantCode int
		want     []string // substrings of the body
	}{
		{name: "routes", method: "GET", path: "/api/routes", wantCode: 200,
			want: []string{`"route": "registry"`, `"subject": "CN=registry.example.com"`, `"not_after": "2027-03-01T00:00:00Z"`, `"default": true`}},
		{name: "config", method: "GET", path: "/api/config", wantCode: 200,
			want: []string{`"file": "/etc/snigate/snigate.yaml"`, `"sha256": "ab"`}},
		{name: "reload accepted", reloadOK: true, method: "POST", path: "/api/reload", wantCode: 200,
			want: []string{`"result": "success"`, `"reason": "admin API"`}},
		{name: "reload rejected answers check's lines", method: "POST", path: "/api/reload", wantCode: 422,
			want: []string{`"result": "failure"`, `snigate.yaml:13: routes[0].health.interval: want a duration such as \"3s\", got \"3\"`}},
		{name: "reload is POST only", method: "GET", path: "/api/reload", wantCode: 405},
		{name: "ready is on", method: "GET", path: "/api/ready", wantCode: 200, want: []string{`"ready": true`, `"switch": "on"`}},
		{name: "ready wants a body", method: "POST", path: "/api/ready", body: `{}`, wantCode: 400, want: []string{`no \"ready\"`}},
		{name: "ready rejects unknown fields", method: "POST", path: "/api/ready", body: `{"ready":false,"x":1}`, wantCode: 400},
		{name: "version without one is 404", method: "GET", path: "/api/version", wantCode: 404},
		{name: "pprof off is 404 and says how to turn it on", method: "GET", path: "/debug/pprof/", wantCode: 404,
			want: []string{"debug.pprof: true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &fakeRuntime{reloadOK: tt.reloadOK}
			addr := startRuntime(t, rt, false)
			a := call(t, tt.method, addr, tt.path, "application/json", tt.body)
			if a.code != tt.wantCode {
				t.Fatalf("%s %s = %d, want %d\n%s", tt.method, tt.path, a.code, tt.wantCode, a.body)
			}
			for _, w := range tt.want {
				if !strings.Contains(a.body, w) {
					t.Errorf("%s %s body lacks %s:\n%s", tt.method, tt.path, w, a.body)
				}
			}
		})
	}
}

// TestReadySwitchFailsReadyz: {"ready":false} makes /readyz answer 503
// with the switch as the reason (not "draining"), and {"ready":true}
// brings it back.
func TestReadySwitchFailsReadyz(t *testing.T) {
	rt := &fakeRuntime{}
	addr := startRuntime(t, rt, false)
	if a := call(t, "GET", addr, "/readyz", "", ""); a.code != 200 {
		t.Fatalf("/readyz before = %d", a.code)
	}
	a := call(t, "POST", addr, "/api/ready", "application/json", `{"ready": false}`)
	var rd Readiness
	if err := json.Unmarshal([]byte(a.body), &rd); err != nil || a.code != 200 {
		t.Fatalf("POST /api/ready = %d %s (%v)", a.code, a.body, err)
	}
	if rd.Ready || rd.Switch != "off" || !strings.Contains(rd.Reason, "switched off") {
		t.Errorf("readiness after off = %+v", rd)
	}
	if rt.switchOn.Load() {
		t.Error("the gateway's switch was not turned off")
	}
	if a := call(t, "GET", addr, "/readyz", "", ""); a.code != 503 || !strings.Contains(a.body, "switched off") {
		t.Errorf("/readyz after off = %d %q, want 503 naming the switch", a.code, a.body)
	}
	call(t, "POST", addr, "/api/ready", "application/json", `{"ready": true}`)
	if a := call(t, "GET", addr, "/readyz", "", ""); a.code != 200 {
		t.Errorf("/readyz after on = %d %q", a.code, a.body)
	}
}

func TestPprofOnlyWhenAsked(t *testing.T) {
	addr := startRuntime(t, &fakeRuntime{}, true)
	if a := call(t, "GET", addr, "/debug/pprof/cmdline", "", ""); a.code != 200 {
		t.Errorf("/debug/pprof/cmdline with debug.pprof = %d %s", a.code, a.body)
	}
	if a := call(t, "GET", addr, "/debug/pprof/goroutine?debug=1", "", ""); a.code != 200 || !strings.Contains(a.body, "goroutine profile") {
		t.Errorf("/debug/pprof/goroutine = %d", a.code)
	}
}

func TestClientRuntimeCalls(t *testing.T) {
	rt := &fakeRuntime{}
	addr := startRuntime(t, rt, false)
	c := &Client{Addr: addr}
	ctx := context.Background()
	res, err := c.Reload(ctx)
	if err != nil || res.Result != ReloadFailure || len(res.Errors) != 1 {
		t.Fatalf("Reload of a rejected file = %+v, %v; want the failure and its errors, not an error", res, err)
	}
	routes, err := c.Routes(ctx)
	if err != nil || len(routes) != 2 || routes[0].Cert == nil || !routes[0].Cert.NotAfter.Equal(testExpiry) {
		t.Fatalf("Routes = %+v, %v", routes, err)
	}
	rd, err := c.SetReady(ctx, false)
	if err != nil || rd.Ready || rd.Switch != "off" {
		t.Fatalf("SetReady(false) = %+v, %v", rd, err)
	}
	rd, err = c.Readiness(ctx)
	if err != nil || rd.Ready {
		t.Fatalf("Readiness = %+v, %v", rd, err)
	}
}

func TestWriteRouteTable(t *testing.T) {
	var b strings.Builder
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := writeRouteTable(&b, (&fakeRuntime{}).Routes(), now); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ROUTE     MODE    NAMES                 UPSTREAMS      BALANCE     CERT                     EXPIRES",
		"registry  bridge  registry.example.com  10.1.0.10:443  roundrobin  CN=registry.example.com  2027-03-01 (59d)",
		"mirror*   splice  mirror.example.com    10.2.0.1:443   leastconn   -                        -",
	}
	if got := strings.TrimRight(b.String(), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func TestRuntimeWithoutGatewayIs503(t *testing.T) {
	_, addr := startServer(t, Config{}, "127.0.0.1:0")
	for _, p := range []string{"/api/routes", "/api/config"} {
		if a := call(t, http.MethodGet, addr, p, "", ""); a.code != 503 {
			t.Errorf("GET %s without a gateway = %d, want 503", p, a.code)
		}
	}
}
