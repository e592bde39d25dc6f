package gateway

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
)

// TestKeyExchanges: serve.key_exchanges decides the key exchange of the
// node-to-gateway leg and upstream_tls.key_exchanges that of the
// gateway-to-registry leg; without them the post-quantum hybrid is used
// on both (the test's clients offer it).
func TestKeyExchanges(t *testing.T) {
	const pq, x = tls.X25519MLKEM768, tls.X25519
	for _, tt := range []struct {
		name           string
		serve, upTLS   string // appended to the serve and upstream_tls lines
		wantNode, want tls.CurveID
	}{
		{name: "defaults", wantNode: pq, want: pq},
		{name: "upstream x25519", upTLS: ", key_exchanges: [x25519]", wantNode: pq, want: x},
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
			cfg := fmt.Sprintf(bridgeConfig, up.addr())
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
