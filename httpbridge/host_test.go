package httpbridge

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/snigate/snigate/oci"
)

// TestHostIsWhatTheCheckApproved: over HTTP/1.1 and HTTP/2, a Host that
// only normalises to the connection's SNI (a trailing dot, another or an
// empty port, brackets) gets 421 and never reaches the registry; the
// forms admitted reach it as the canonical name, so that a front routing
// on Host sees exactly the name the check approved.
func TestHostIsWhatTheCheckApproved(t *testing.T) {
	p := newTestPKI(t)
	up, seen := echoUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	_, port, err := net.SplitHostPort(w.addr)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, host string
		upstream   string // the Host the registry sees; "": refused with 421
	}{
		{name: "the name", host: registryName, upstream: registryName},
		{name: "the default port", host: registryName + ":443", upstream: registryName},
		{name: "upper case letters", host: "Registry.TEST", upstream: registryName},
		{name: "the listener's port", host: registryName + ":" + port, upstream: registryName + ":" + port},
		{name: "trailing dot", host: registryName + "."},
		{name: "trailing dot and port", host: registryName + ".:443"},
		{name: "another port", host: registryName + ":1"},
		{name: "port with a leading zero", host: registryName + ":0443"},
		{name: "empty port", host: registryName + ":"},
		{name: "brackets", host: "[" + registryName + "]"},
		{name: "brackets and port", host: "[" + registryName + "]:443"},
		{name: "another name", host: "other.test"},
	}
	for _, proto := range []string{"http/1.1", "h2"} {
		node := w.node(t, proto)
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				before := len(seen.all())
				resp, body := do(t, node, "GET", "/v2/team/app/manifests/v1", http.Header{"Host": {tt.host}})
				got := seen.all()[before:]
				if tt.upstream == "" {
					assertMisdirected(t, resp, body, tt.host)
					if len(got) != 0 {
						t.Errorf("the registry saw %d requests (Host %q), want none", len(got), got[0].Host)
					}
					return
				}
				if resp.StatusCode != http.StatusOK || len(got) != 1 {
					t.Fatalf("status %d, registry saw %d requests; want 200 and one; body %s", resp.StatusCode, len(got), body)
				}
				if got[0].Host != tt.upstream || got[0].Header.Get("Host") != "" {
					t.Errorf("registry saw Host %q (header %q), want %q", got[0].Host, got[0].Header.Get("Host"), tt.upstream)
				}
			})
		}
	}
}

// assertMisdirected checks a 421 DENIED answer naming host as received.
func assertMisdirected(t *testing.T, resp *http.Response, body, host string) {
	t.Helper()
	var eb oci.ErrorBody
	if resp.StatusCode != http.StatusMisdirectedRequest || json.Unmarshal([]byte(body), &eb) != nil || len(eb.Errors) != 1 ||
		!strings.Contains(eb.Errors[0].Message, "Host "+strconv.Quote(host)) {
		t.Errorf("status %d body %s, want 421 DENIED naming Host %q", resp.StatusCode, body, host)
	}
}

func TestUpstreamHost(t *testing.T) {
	tests := []struct {
		name, host, sni string
		port            int
		want            string
		ok              bool
	}{
		{name: "name", host: "r.test", sni: "r.test", port: 443, want: "r.test", ok: true},
		{name: "SNI with trailing dot", host: "r.test", sni: "R.test.", port: 443, want: "r.test", ok: true},
		{name: "listener port 443 named", host: "r.test:443", sni: "r.test", port: 443, want: "r.test", ok: true},
		{name: "listener port", host: "r.test:8443", sni: "r.test", port: 8443, want: "r.test:8443", ok: true},
		{name: "other port", host: "r.test:8443", sni: "r.test", port: 443},
		{name: "no SNI", host: "", sni: "", port: 443},
		{name: "no SNI, any host", host: "r.test", sni: "", port: 443},
		{name: "trailing dot", host: "r.test.", sni: "r.test", port: 443},
		{name: "empty port", host: "r.test:", sni: "r.test", port: 443},
		{name: "two ports", host: "r.test:443:443", sni: "r.test", port: 443},
		{name: "brackets", host: "[r.test]", sni: "r.test", port: 443},
		{name: "kelvin sign", host: "\u212a.test", sni: "k.test", port: 443},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := upstreamHost(tt.host, tt.sni, tt.port)
			if got != tt.want || ok != tt.ok {
				t.Errorf("upstreamHost(%q, %q, %d) = %q, %v; want %q, %v", tt.host, tt.sni, tt.port, got, ok, tt.want, tt.ok)
			}
		})
	}
}
