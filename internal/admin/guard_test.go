package admin

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/snigate/snigate/upstream"
)

// TestCrossSiteRequestsRefused is the regression test of a drain ordered
// by a web page: a text/plain POST with a foreign Origin and Host (what a
// form on another site, or a page after DNS rebinding, sends) set an
// upstream to drain. Each such request is now refused and the state stays;
// snigate ctl's own requests still work.
func TestCrossSiteRequestsRefused(t *testing.T) {
	const path = "/api/upstreams/registry/10.1.0.10:443"
	tests := []struct {
		name        string
		method      string
		path        string
		host        string
		origin      string
		contentType string
		wantCode    int
		wantMsg     string
	}{
		{name: "page on another site", method: "POST", path: path, host: "evil.example", origin: "http://evil.example",
			contentType: "text/plain", wantCode: 403, wantMsg: "Origin"},
		{name: "Origin with JSON", method: "POST", path: path, origin: "http://127.0.0.1:9090",
			contentType: "application/json", wantCode: 403, wantMsg: "Origin"},
		{name: "DNS rebinding read", method: "GET", path: "/api/upstreams", host: "rebind.evil.example:9090", wantCode: 421, wantMsg: "listen.admin"},
		{name: "DNS rebinding metrics", method: "GET", path: "/metrics", host: "rebind.evil.example", wantCode: 421},
		{name: "text/plain POST", method: "POST", path: path, contentType: "text/plain", wantCode: 415, wantMsg: "application/json"},
		{name: "no content type", method: "POST", path: path, wantCode: 415},
		{name: "ctl", method: "POST", path: path, contentType: "application/json", wantCode: 200},
		{name: "localhost", method: "POST", path: path, host: "localhost:9090", contentType: "application/json; charset=utf-8", wantCode: 200},
		{name: "IPv6 literal", method: "GET", path: "/api/upstreams", host: "[::1]:9090", wantCode: 200},
		{name: "listen host name", method: "GET", path: "/api/upstreams", host: "bastion.internal:9090", wantCode: 200},
		{name: "listen host name with dot", method: "GET", path: "/healthz", host: "Bastion.Internal.", wantCode: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake()
			_, addr := startServer(t, Config{Upstreams: fake, Hosts: []string{"bastion.internal"}}, "127.0.0.1:0")
			req, err := http.NewRequest(tt.method, "http://"+addr+tt.path, strings.NewReader(`{"state":"drain"}`))
			must(t, err)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := testClient.Do(req)
			must(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("code = %d, want %d; body %s", resp.StatusCode, tt.wantCode, body)
			}
			if tt.wantCode != 200 && fake.state("registry", "10.1.0.10:443") != upstream.StateReady {
				t.Error("a refused request changed the upstream's state")
			}
			if !strings.Contains(string(body), tt.wantMsg) {
				t.Errorf("body %s does not say %q", body, tt.wantMsg)
			}
		})
	}
}

// TestUnixSocketAcceptsAnyHost: no browser reaches a unix socket, and
// clients name it with a placeholder host.
func TestUnixSocketAcceptsAnyHost(t *testing.T) {
	fake := newFake()
	_, addr := startServer(t, Config{Upstreams: fake}, UnixPrefix+sockPath(t))
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", strings.TrimPrefix(addr, UnixPrefix))
	}}}
	resp, err := c.Get("http://snigate-admin/api/upstreams")
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("code = %d over the unix socket, want 200", resp.StatusCode)
	}
}

func TestListenHost(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:9090": "", ":9090": "", "[::1]:9090": "", "unix:/run/a.sock": "",
		"bastion.internal:9090": "bastion.internal", "garbage": "",
	} {
		if got := ListenHost(addr); got != want {
			t.Errorf("ListenHost(%q) = %q, want %q", addr, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
