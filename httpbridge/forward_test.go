package httpbridge

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestForwarderKeepsReverseProxyRules: what the forwarder kept of
// httputil.ReverseProxy, over HTTP/1.1 and HTTP/2 node legs: the hop-by-hop
// headers and those the node's Connection header names never reach the
// registry (nor the registry's reach the node), `Te: trailers` does, no
// User-Agent is made up, a query url.ParseQuery cannot read is re-encoded,
// trailers pass, a streamed answer arrives whole, and a 101 is a 502.
func TestForwarderKeepsReverseProxyRules(t *testing.T) {
	p := newTestPKI(t)
	s := &seen{}
	up := startUpstream(t, p.upstreamTLS("h2", "http/1.1"), s.wrap(http.HandlerFunc(registryOfRules)))
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Forwarded: true}})
	for _, proto := range []string{"http/1.1", "h2"} {
		c := w.node(t, proto)
		t.Run(proto+"/request headers", func(t *testing.T) {
			before := len(s.all())
			hdr := http.Header{"X-Secret": {"node"}, "Keep-Alive": {"timeout=5"}, "Te": {"trailers"}, "X-Kept": {"yes"}}
			if proto == "http/1.1" {
				hdr["Connection"] = []string{"X-Secret"}
			} else {
				delete(hdr, "X-Secret") // HTTP/2 has no Connection header
			}
			if resp, body := do(t, c, "GET", "/v2/team/app/manifests/v1", hdr); resp.StatusCode != 200 {
				t.Fatalf("status %d %s", resp.StatusCode, body)
			}
			got := s.all()[before].Header
			for _, k := range []string{"X-Secret", "Keep-Alive", "Connection"} {
				if v, ok := got[k]; ok {
					t.Errorf("registry saw hop-by-hop %s: %q", k, v)
				}
			}
			if got.Get("Te") != "trailers" || got.Get("X-Kept") != "yes" {
				t.Errorf("registry saw Te %q, X-Kept %q; want trailers, yes", got.Get("Te"), got.Get("X-Kept"))
			}
			if ua, ok := got["User-Agent"]; ok && ua[0] != "Go-http-client/1.1" && ua[0] != "Go-http-client/2.0" {
				t.Errorf("registry saw User-Agent %q: the node's client sent Go's", ua)
			}
		})
		t.Run(proto+"/query", func(t *testing.T) {
			before := len(s.all())
			if resp, body := do(t, c, "GET", "/v2/team/app/tags/list?n=1;last=x", nil); resp.StatusCode != 200 {
				t.Fatalf("status %d %s", resp.StatusCode, body)
			}
			if q := s.all()[before].URL.RawQuery; strings.Contains(q, ";") {
				t.Errorf("registry got query %q with the node's semicolon", q)
			}
		})
		t.Run(proto+"/answer", func(t *testing.T) {
			resp, body := do(t, c, "GET", "/v2/team/app/blobs/"+dgst, nil)
			if resp.StatusCode != 200 || body != strings.Repeat("chunk ", 64) {
				t.Fatalf("status %d, body %q", resp.StatusCode, body)
			}
			if v := resp.Header.Get("X-Upstream-Private"); v != "" {
				t.Errorf("node saw X-Upstream-Private %q, which the registry's Connection named", v)
			}
			if v := resp.Trailer.Get("X-Checksum"); v != "done" {
				t.Errorf("node saw trailer X-Checksum %q, want done", v)
			}
		})
		t.Run(proto+"/switching protocols", func(t *testing.T) {
			if resp, body := do(t, c, "GET", "/v2/team/app/manifests/upgrade", nil); resp.StatusCode != http.StatusBadGateway {
				t.Errorf("status %d %s, want 502 for the registry's 101", resp.StatusCode, body)
			}
		})
	}
}

// registryOfRules answers what TestForwarderKeepsReverseProxyRules
// looks at: a streamed blob with a trailer and a header its Connection
// names, a 101 to the "upgrade" manifest, "ok" otherwise.
func registryOfRules(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/manifests/upgrade"):
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		w.WriteHeader(http.StatusSwitchingProtocols)
	case strings.Contains(r.URL.Path, "/blobs/"):
		w.Header().Set("Trailer", "X-Checksum")
		w.Header().Set("X-Upstream-Private", "secret")
		w.Header().Add("Connection", "X-Upstream-Private")
		for range 64 {
			_, _ = io.WriteString(w, "chunk ")
			http.NewResponseController(w).Flush()
		}
		w.Header().Set("X-Checksum", "done")
	default:
		_, _ = io.WriteString(w, "ok")
	}
}
