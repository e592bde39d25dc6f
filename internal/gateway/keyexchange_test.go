package gateway

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
)

// TestKeyExchanges: serve.key_exchanges decides the key exchange of the
// node-to-gateway leg and upstream_tls.key_exchanges that of the
// gateway-to-registry leg. Without them the node leg takes X25519 (the
// test's Go client sends an X25519 share beside the hybrid's) and the
// upstream leg's full handshake the post-quantum hybrid.
func TestKeyExchanges(t *testing.T) {
	const pq, x = tls.X25519MLKEM768, tls.X25519
	for _, tt := range []struct {
		name           string
		serve, upTLS   string // appended to the serve and upstream_tls lines
		wantNode, want tls.CurveID
	}{
		{name: "defaults", wantNode: x, want: pq},
		{name: "serve lists the hybrid", serve: ", key_exchanges: [x25519mlkem768, x25519]", wantNode: pq, want: pq},
		{name: "upstream x25519", upTLS: ", key_exchanges: [x25519]", wantNode: x, want: x},
		{name: "serve x25519", serve: ", key_exchanges: [x25519]", wantNode: x, want: pq},
		{name: "both x25519", serve: ", key_exchanges: [x25519]", upTLS: ", key_exchanges: [X25519]", wantNode: x, want: x},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "")
			seen := make(chan tls.CurveID, 8)
			up := startEcho(t, w.leaf("registry.test"), w.ca.Pool())
			up.setOnState(func(cs tls.ConnectionState) {
				select {
				case seen <- cs.CurveID:
				default:
				}
			})
			_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
			must(t, err)
			// TCP health checks: a TLS check's session ticket would let
			// the tunnel's upstream leg resume, which it does with X25519
			// by design (TestUpstreamLegResumesWithX25519), whatever the
			// full handshake would choose.
			cfg := strings.Replace(fmt.Sprintf(bridgeConfig, up.addr()), "    upstreams: [", "    health: {check: tcp}\n    upstreams: [", 1)
			for _, r := range []struct{ line, add string }{{"key: serve.key}", tt.serve}, {"ca: ca.crt}", tt.upTLS}} {
				if !strings.Contains(cfg, r.line) {
					t.Fatalf("the test's configuration has no %q line to extend:\n%s", r.line, cfg)
				}
				cfg = strings.Replace(cfg, r.line, strings.TrimSuffix(r.line, "}")+r.add+"}", 1)
			}
			w.writeConfig(cfg)
			w.start()
			c, err := w.dialTLS("registry.test")
			must(t, err)
			defer c.Close()
			echoRoundTrip(t, c, "hello")
			if got := c.ConnectionState().CurveID; got != tt.wantNode {
				t.Errorf("node leg key exchange %v, want %v", got, tt.wantNode)
			}
			// The upstream sees the health checks' handshakes too; skip
			// those that report no group and look for the tunnel's.
			for got := range seen {
				if got == tt.want {
					return
				}
				if got != 0 {
					t.Fatalf("upstream leg key exchange %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestUpstreamLegResumesWithX25519: through the gateway's own upstream
// client side (certs.ClientTLS, its scoped session cache), the first
// tunnel's upstream handshake is a full one with the post-quantum hybrid
// and the next one resumes that session with X25519 alone: before, every
// resumption paid ML-KEM again.
func TestUpstreamLegResumesWithX25519(t *testing.T) {
	w := newWorld(t, "")
	seen := make(chan tls.ConnectionState, 8)
	up := startEcho(t, w.leaf("registry.test"), w.ca.Pool())
	up.setOnState(func(cs tls.ConnectionState) { seen <- cs })
	_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
	must(t, err)
	w.writeConfig(fmt.Sprintf(strings.Replace(bridgeConfig, "    serve:", "    health: {check: tcp}\n    serve:", 1), up.addr()))
	w.start()
	for i, want := range []struct {
		curve   tls.CurveID
		resumed bool
	}{{tls.X25519MLKEM768, false}, {tls.X25519, true}} {
		c, err := w.dialTLS("registry.test")
		must(t, err)
		echoRoundTrip(t, c, "hello")
		c.Close()
		if cs := <-seen; cs.CurveID != want.curve || cs.DidResume != want.resumed {
			t.Errorf("tunnel %d: upstream leg %v resumed %v, want %v resumed %v", i+1, cs.CurveID, cs.DidResume, want.curve, want.resumed)
		}
	}
}
