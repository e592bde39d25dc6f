package config

import (
	"crypto/tls"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKeyExchangesParsedToIDs: serve.key_exchanges and
// upstream_tls.key_exchanges come out of Parse as the CurvePreferences
// crypto/tls takes (they were strings parsed again by each user before).
func TestKeyExchangesParsedToIDs(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	tests := []struct {
		name string
		list string // YAML flow list
		want []tls.CurveID
	}{
		{name: "absent", list: "", want: nil},
		{name: "empty", list: "[]", want: nil},
		{name: "one", list: "[x25519]", want: []tls.CurveID{tls.X25519}},
		{name: "any case, spaces", list: `[X25519MLKEM768, " x25519 "]`, want: []tls.CurveID{tls.X25519MLKEM768, tls.X25519}},
		{name: "hybrids", list: "[secp256r1mlkem768, SecP384r1MLKEM1024]", want: []tls.CurveID{tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024}},
		{name: "aliases of one curve kept once", list: "[P-256, secp256r1, prime256v1, CurveP384, p-521]",
			want: []tls.CurveID{tls.CurveP256, tls.CurveP384, tls.CurveP521}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := minimalBridge
			if tt.list != "" {
				yaml = strings.Replace(yaml, "key: serve.key}", "key: serve.key, key_exchanges: "+tt.list+"}", 1)
				yaml = strings.Replace(yaml, "ca: ca.crt}", "ca: ca.crt, key_exchanges: "+tt.list+"}", 1)
			}
			c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			r := c.Routes[0]
			if !slices.Equal(r.Serve.KeyExchanges, tt.want) {
				t.Errorf("serve.key_exchanges = %v, want %v", r.Serve.KeyExchanges, tt.want)
			}
			if !slices.Equal(r.UpstreamTLS.KeyExchanges, tt.want) {
				t.Errorf("upstream_tls.key_exchanges = %v, want %v", r.UpstreamTLS.KeyExchanges, tt.want)
			}
		})
	}
}
