package httpbridge

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snigate/snigate/oci"
)

// echoUpstream answers 200 "ok" to everything and records what it saw.
func echoUpstream(tb testing.TB, p *testPKI) (*testUpstream, *seen) {
	s := &seen{}
	u := startUpstream(tb, p.upstreamTLS("h2", "http/1.1"), s.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})))
	return u, s
}

func do(tb testing.TB, c *http.Client, method, path string, hdr http.Header) (*http.Response, string) {
	tb.Helper()
	req, err := http.NewRequest(method, "https://"+registryName+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if h := hdr.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp, string(body)
}

// TestRefusals: a request whose Host is not the connection's SNI gets
// 421, a method outside methods 405, a repository outside the allow-list
// 403, in that order, each with an OCI DENIED body that says what to
// change; none reaches the registry, each is audited and counted.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name, method, path, host string
		status                   int
		reason, msg              string
	}{
		{name: "host differs from SNI", method: "GET", path: "/v2/team/app/manifests/v1", host: "other.test",
			status: 421, reason: "host", msg: `does not match the TLS server name "registry.test"`},
		{name: "host first, before method", method: "POST", path: "/v2/other/x/blobs/uploads/", host: "other.test:443",
			status: 421, reason: "host", msg: "does not match"},
		{name: "push refused", method: "POST", path: "/v2/team/app/blobs/uploads/",
			status: 405, reason: "method", msg: "add it to routes[].http.methods"},
		{name: "method before repository", method: "PUT", path: "/v2/other/x/manifests/v1",
			status: 405, reason: "method", msg: "method PUT is not allowed"},
		{name: "repository outside the allow-list", method: "GET", path: "/v2/other/app/manifests/v1",
			status: 403, reason: "repository", msg: `repository "other/app" is not in the allow-list`},
		{name: "deeper than team/*", method: "GET", path: "/v2/team/app/sub/manifests/v1",
			status: 403, reason: "repository", msg: "not in the allow-list"},
		{name: "malformed name under an allow-list", method: "GET", path: "/v2/team/../other/manifests/v1",
			status: 403, reason: "repository", msg: "names none of them"},
		{name: "catalog under an allow-list", method: "GET", path: "/v2/_catalog",
			status: 403, reason: "repository", msg: "names none of them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPKI(t)
			up, seen := echoUpstream(t, p)
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Repositories: []string{"team/*"}}})
			resp, body := do(t, w.node(t, "h2"), tt.method, tt.path, http.Header{"Host": {tt.host}})
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.status, body)
			}
			var eb oci.ErrorBody
			if err := json.Unmarshal([]byte(body), &eb); err != nil || len(eb.Errors) != 1 || eb.Errors[0].Code != "DENIED" ||
				!strings.Contains(eb.Errors[0].Message, tt.msg) {
				t.Errorf("body %s (%v), want one DENIED error saying %q", body, err, tt.msg)
			}
			if tt.status == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q, want GET, HEAD", resp.Header.Get("Allow"))
			}
			if n := len(seen.all()); n != 0 {
				t.Errorf("the registry saw %d requests, want none", n)
			}
			rec := w.audit.wait(t, 1)[0]
			if rec.Status != tt.status || rec.Method != tt.method || rec.Upstream != "" || !strings.Contains(rec.Error, tt.msg) {
				t.Errorf("audit %+v, want status %d, method %s, no upstream, error about %q", rec, tt.status, tt.method, tt.msg)
			}
			if got := testutil.ToFloat64(w.m.refused.WithLabelValues("registry", tt.reason)); got != 1 {
				t.Errorf("refused{reason=%s} = %v, want 1", tt.reason, got)
			}
			w.logs.Wait(t, "http request refused", "reason="+tt.reason)
		})
	}
}

// TestAllowedRequestsPass: GET and HEAD of an allowed repository, and the
// base endpoint under an allow-list, reach the registry.
func TestAllowedRequestsPass(t *testing.T) {
	p := newTestPKI(t)
	up, seen := echoUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Repositories: []string{"team/**"}}})
	node := w.node(t, "http/1.1")
	for _, r := range []struct{ method, path string }{{"GET", "/v2/"}, {"HEAD", "/v2/team/a/b/manifests/v1"}, {"GET", "/v2/team/app/tags/list"}} {
		if resp, body := do(t, node, r.method, r.path, nil); resp.StatusCode != 200 {
			t.Errorf("%s %s: %d %s", r.method, r.path, resp.StatusCode, body)
		}
	}
	if n := len(seen.all()); n != 3 {
		t.Errorf("the registry saw %d requests, want 3", n)
	}
}

// TestForwardedHeaders: the registry sees the node's address in
// X-Forwarded-For, X-Real-IP, Forwarded and X-Forwarded-Proto, never
// what the node claimed; with forwarded off it sees none of them. Token
// authentication headers pass both ways untouched.
func TestForwardedHeaders(t *testing.T) {
	spoof := http.Header{
		"X-Forwarded-For": {"6.6.6.6"}, "X-Real-Ip": {"6.6.6.6"}, "Forwarded": {"for=6.6.6.6"},
		"X-Forwarded-Host": {"evil.test"}, "X-Forwarded-Proto": {"http"}, "Authorization": {"Bearer node-token"},
	}
	tests := []struct {
		name      string
		forwarded bool
		want      map[string]string
	}{
		{name: "forwarded", forwarded: true, want: map[string]string{
			"X-Forwarded-For": "127.0.0.1", "X-Real-Ip": "127.0.0.1", "Forwarded": "for=127.0.0.1;proto=https",
			"X-Forwarded-Proto": "https", "X-Forwarded-Host": "", "Authorization": "Bearer node-token"}},
		{name: "not forwarded", forwarded: false, want: map[string]string{
			"X-Forwarded-For": "", "X-Real-Ip": "", "Forwarded": "", "X-Forwarded-Proto": "", "X-Forwarded-Host": "",
			"Authorization": "Bearer node-token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPKI(t)
			s := &seen{}
			up := startUpstream(t, p.upstreamTLS("h2"), s.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="https://auth.test/token",service="registry"`)
				w.Header().Set("Docker-Content-Digest", dgst)
				w.WriteHeader(http.StatusUnauthorized)
			})))
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Forwarded: tt.forwarded}})
			resp, _ := do(t, w.node(t, "h2"), "GET", "/v2/team/app/manifests/v1", spoof)
			if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" || resp.Header.Get("Docker-Content-Digest") != dgst {
				t.Errorf("node got %d %v, want the registry's 401 with its challenge and digest", resp.StatusCode, resp.Header)
			}
			r := s.all()[0]
			for k, v := range tt.want {
				if got := strings.Join(r.Header.Values(k), ","); got != v {
					t.Errorf("registry saw %s: %q, want %q", k, got, v)
				}
			}
			if rec := w.audit.wait(t, 1)[0]; rec.Digest != dgst || rec.Kind != oci.KindManifest || rec.Reference != "v1" || rec.Repository != "team/app" {
				t.Errorf("audit %+v, want the response's digest for a manifest by tag", rec)
			}
		})
	}
}
