package gateway

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
)

// TestUpstreamKeyExchanges: upstream_tls.key_exchanges decides the key
// exchange of the gateway-to-registry leg; without it the post-quantum
// hybrid is used.
func TestUpstreamKeyExchanges(t *testing.T) {
	for _, tt := range []struct {
		name, setting string
		want          tls.CurveID
	}{
		{name: "default", setting: "", want: tls.X25519MLKEM768},
		{name: "x25519", setting: ", key_exchanges: [x25519]", want: tls.X25519},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "")
			seen := make(chan tls.CurveID, 8)
			up := startEcho(t, w.leaf("registry.test"), w.ca.Pool())
			up.onState = func(cs tls.ConnectionState) {
				select {
				case seen <- cs.CurveID:
				default:
				}
			}
			_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
			must(t, err)
			cfg := strings.Replace(fmt.Sprintf(bridgeConfig, up.addr()), "ca: ca.crt}", "ca: ca.crt"+tt.setting+"}", 1)
			w.writeConfig(cfg)
			w.start()
			c, err := w.dialTLS("registry.test")
			must(t, err)
			echoRoundTrip(t, c, "hello")
			c.Close()
			for got := range seen {
				if got == tt.want {
					return
				}
				if got != 0 && got != tt.want {
					t.Fatalf("upstream leg key exchange %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestServeKeyExchanges: serve.key_exchanges decides the key exchange of
// the node-to-gateway leg; without it the hybrid the node offers is used.
func TestServeKeyExchanges(t *testing.T) {
	for _, tt := range []struct {
		name, setting string
		want          tls.CurveID
	}{
		{name: "default", setting: "", want: tls.X25519MLKEM768},
		{name: "x25519", setting: ", key_exchanges: [x25519]", want: tls.X25519},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "")
			up := startEcho(t, w.leaf("registry.test"), w.ca.Pool())
			_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
			must(t, err)
			cfg := strings.Replace(fmt.Sprintf(bridgeConfig, up.addr()), "key: serve.key}", "key: serve.key"+tt.setting+"}", 1)
			if !strings.Contains(cfg, "key: serve.key"+tt.setting+"}") {
				t.Fatalf("the test's configuration has no serve line to extend:\n%s", cfg)
			}
			w.writeConfig(cfg)
			w.start()
			c, err := w.dialTLS("registry.test")
			must(t, err)
			defer c.Close()
			echoRoundTrip(t, c, "hello")
			if got := c.ConnectionState().CurveID; got != tt.want {
				t.Errorf("node leg key exchange %v, want %v", got, tt.want)
			}
		})
	}
}
