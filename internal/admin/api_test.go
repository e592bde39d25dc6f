package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/upstream"
)

func TestListUpstreams(t *testing.T) {
	tests := []struct {
		name     string
		fake     *fakeUpstreams
		wantCode int
		want     string // exact body for an empty list, else compared decoded
	}{
		{name: "routes", fake: newFake(), wantCode: 200},
		{name: "no upstreams is an empty array", fake: &fakeUpstreams{}, wantCode: 200, want: "[]\n"},
		{name: "no runtime API", fake: nil, wantCode: 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{}
			if tt.fake != nil {
				cfg.Upstreams = tt.fake
			}
			_, addr := startServer(t, cfg, "127.0.0.1:0")
			a := call(t, "GET", addr, "/api/upstreams", "", "")
			if a.code != tt.wantCode {
				t.Fatalf("code = %d, want %d; body %q", a.code, tt.wantCode, a.body)
			}
			switch {
			case a.code != 200:
				a.jsonError(t)
			case tt.want != "":
				if a.body != tt.want {
					t.Errorf("body = %q, want %q", a.body, tt.want)
				}
			default:
				var got []upstream.Status
				if err := json.Unmarshal([]byte(a.body), &got); err != nil {
					t.Fatal(err)
				}
				if want := tt.fake.Upstreams(); !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v\nwant %+v", got, want)
				}
			}
		})
	}
}

func TestListUpstreamsFieldNames(t *testing.T) {
	_, addr := startServer(t, Config{Upstreams: newFake()}, "127.0.0.1:0")
	a := call(t, "GET", addr, "/api/upstreams", "", "")
	var got []map[string]any
	if err := json.Unmarshal([]byte(a.body), &got); err != nil {
		t.Fatal(err)
	}
	// the contract, "Runtime API".
	for _, key := range []string{"route", "upstream", "state", "healthy", "active_connections", "last_check", "last_error"} {
		if _, ok := got[0][key]; !ok {
			t.Errorf("upstream object lacks %q: %v", key, got[0])
		}
	}
}

func TestSetUpstreamStateTransitions(t *testing.T) {
	states := []upstream.State{upstream.StateReady, upstream.StateDrain, upstream.StateMaint}
	fake := newFake()
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	_, addr := startServer(t, Config{Upstreams: fake, Metrics: m}, "127.0.0.1:0")
	const route, up = "registry", "10.1.0.10:443"
	for _, from := range states {
		for _, to := range states {
			t.Run(fmt.Sprintf("%s to %s", from, to), func(t *testing.T) {
				if _, err := fake.SetUpstreamState(route, up, from); err != nil {
					t.Fatal(err)
				}
				before := testkit.Value(t, m.stateChanges.WithLabelValues(route, string(to)))
				a := call(t, "POST", addr, "/api/upstreams/"+route+"/"+up, "application/json", fmt.Sprintf(`{"state": %q}`, to))
				if a.code != 200 {
					t.Fatalf("code = %d; body %q", a.code, a.body)
				}
				var st upstream.Status
				if err := json.Unmarshal([]byte(a.body), &st); err != nil {
					t.Fatal(err)
				}
				if st.Route != route || st.Upstream != up || st.State != to || !st.Healthy || st.ActiveConnections != 2 {
					t.Errorf("answer %+v, want the full status of %s/%s in state %s", st, route, up, to)
				}
				if got := fake.state(route, up); got != to {
					t.Errorf("gateway state = %s, want %s", got, to)
				}
				if got := testkit.Value(t, m.stateChanges.WithLabelValues(route, string(to))); got != before+1 {
					t.Errorf("state_changes_total = %v, want %v", got, before+1)
				}
			})
		}
	}
}

// The upstream is a host:port, so its path segment holds a colon (and an
// IPv6 address brackets); both verbatim and escaped forms must work.
func TestSetUpstreamPathForms(t *testing.T) {
	tests := []struct {
		name, path, route, upstream string
	}{
		{"colon verbatim", "/api/upstreams/registry/10.1.0.10:443", "registry", "10.1.0.10:443"},
		{"colon escaped", "/api/upstreams/registry/10.1.0.10%3A443", "registry", "10.1.0.10:443"},
		{"host name", "/api/upstreams/registry/registry-2.internal:443", "registry", "registry-2.internal:443"},
		{"IPv6 escaped", "/api/upstreams/registry/%5B2001:db8::1%5D:443", "registry", "[2001:db8::1]:443"},
		{"IPv6 all escaped", "/api/upstreams/registry/%5B2001%3Adb8%3A%3A1%5D%3A443", "registry", "[2001:db8::1]:443"},
		{"route escaped", "/api/upstreams/%6Dirror/10.2.0.1:443", "mirror", "10.2.0.1:443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake()
			_, addr := startServer(t, Config{Upstreams: fake}, "127.0.0.1:0")
			a := call(t, "POST", addr, tt.path, "application/json", `{"state":"drain"}`)
			if a.code != 200 {
				t.Fatalf("code = %d; body %q", a.code, a.body)
			}
			if got := fake.state(tt.route, tt.upstream); got != upstream.StateDrain {
				t.Errorf("state of %s/%s = %q, want drain", tt.route, tt.upstream, got)
			}
		})
	}
}

// goodUpstreamPath names an upstream the fake knows.
const goodUpstreamPath = "/api/upstreams/registry/10.1.0.10:443"

// setUpstreamErrorCases are POSTs to the upstream state API it refuses, and the answers.
var setUpstreamErrorCases = []struct {
	name, path, contentType, body string
	gatewayErr                    error
	wantCode                      int
	wantMsg                       []string
}{
	{name: "unknown route", path: "/api/upstreams/nope/10.1.0.10:443", body: `{"state":"drain"}`,
		wantCode: 404, wantMsg: []string{`route "nope": not found; GET /api/upstreams lists`}},
	{name: "unknown upstream", path: "/api/upstreams/registry/10.9.9.9:443", body: `{"state":"drain"}`,
		wantCode: 404, wantMsg: []string{`route "registry" upstream "10.9.9.9:443": unknown upstream`}},
	{name: "upstream of another route", path: "/api/upstreams/mirror/10.1.0.10:443", body: `{"state":"drain"}`,
		wantCode: 404, wantMsg: []string{"unknown upstream"}},
	{name: "empty body", path: goodUpstreamPath, wantCode: 400, wantMsg: []string{"empty request body", `"ready"|"drain"|"maint"`}},
	{name: "blank body", path: goodUpstreamPath, body: " \n", wantCode: 400, wantMsg: []string{"empty request body"}},
	{name: "not JSON", path: goodUpstreamPath, body: "state=drain", wantCode: 400, wantMsg: []string{"bad request body", `"ready"|"drain"|"maint"`}},
	{name: "form content type", path: goodUpstreamPath, body: `{"state":"drain"}`, contentType: "application/x-www-form-urlencoded",
		wantCode: 415, wantMsg: []string{"want application/json", `"ready"|"drain"|"maint"`}},
	{name: "text/plain content type", path: goodUpstreamPath, body: `{"state":"drain"}`, contentType: "text/plain",
		wantCode: 415, wantMsg: []string{`Content-Type "text/plain"`}},
	{name: "truncated JSON", path: goodUpstreamPath, body: `{"state":"dr`, wantCode: 400, wantMsg: []string{"bad request body"}},
	{name: "JSON string", path: goodUpstreamPath, body: `"drain"`, wantCode: 400, wantMsg: []string{"bad request body"}},
	{name: "state not a string", path: goodUpstreamPath, body: `{"state":1}`, wantCode: 400, wantMsg: []string{"bad request body"}},
	{name: "unknown state", path: goodUpstreamPath, body: `{"state":"down"}`,
		wantCode: 400, wantMsg: []string{`unknown state "down"`, "ready, drain, maint"}},
	{name: "state in capitals", path: goodUpstreamPath, body: `{"state":"DRAIN"}`, wantCode: 400, wantMsg: []string{`unknown state "DRAIN"`}},
	{name: "no state", path: goodUpstreamPath, body: `{}`, wantCode: 400, wantMsg: []string{`no "state"`}},
	{name: "null state", path: goodUpstreamPath, body: `{"state":null}`, wantCode: 400, wantMsg: []string{`no "state"`}},
	{name: "unknown field", path: goodUpstreamPath, body: `{"state":"drain","force":true}`, wantCode: 400, wantMsg: []string{`unknown field "force"`}},
	{name: "two objects", path: goodUpstreamPath, body: `{"state":"drain"}{"state":"ready"}`, wantCode: 400, wantMsg: []string{"after the JSON object"}},
	{name: "too large", path: goodUpstreamPath, body: `{"state":"drain","x":"` + strings.Repeat("a", MaxBodyBytes) + `"}`,
		wantCode: 413, wantMsg: []string{"larger than 4096 bytes"}},
	{name: "gateway rejects the state", path: goodUpstreamPath, body: `{"state":"drain"}`,
		gatewayErr: fmt.Errorf("set state: %w", upstream.ErrInvalidState), wantCode: 400, wantMsg: []string{"ready, drain, maint"}},
	{name: "gateway failure", path: goodUpstreamPath, body: `{"state":"drain"}`,
		gatewayErr: errors.New("pool closed"), wantCode: 500, wantMsg: []string{"pool closed"}},
}

func TestSetUpstreamErrors(t *testing.T) {
	for _, tt := range setUpstreamErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake()
			fake.err = tt.gatewayErr
			_, addr := startServer(t, Config{Upstreams: fake}, "127.0.0.1:0")
			ct := tt.contentType
			if ct == "" {
				ct = "application/json"
			}
			a := call(t, "POST", addr, tt.path, ct, tt.body)
			if a.code != tt.wantCode {
				t.Fatalf("code = %d, want %d; body %q", a.code, tt.wantCode, a.body)
			}
			msg := a.jsonError(t)
			for _, want := range tt.wantMsg {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			if got := fake.state("registry", "10.1.0.10:443"); got != upstream.StateReady {
				t.Errorf("a failed request changed the state to %s", got)
			}
		})
	}
}

func TestSetUpstreamWithoutRuntimeAPI(t *testing.T) {
	_, addr := startServer(t, Config{}, "127.0.0.1:0")
	a := call(t, "POST", addr, "/api/upstreams/registry/10.1.0.10:443", "application/json", `{"state":"drain"}`)
	if a.code != 503 {
		t.Fatalf("code = %d; body %q", a.code, a.body)
	}
	a.jsonError(t)
}
