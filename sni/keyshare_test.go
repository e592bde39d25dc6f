package sni

import (
	"bytes"
	"crypto/tls"
	"slices"
	"testing"
)

func keyShareExt(entries ...[]byte) []byte {
	list := bytes.Join(entries, nil)
	return ext(extKeyShare, append(u16(len(list)), list...))
}

func keyShareEntry(group tls.CurveID, keyLen int) []byte {
	return append(append(u16(int(group)), u16(keyLen)...), make([]byte, keyLen)...)
}

// TestClientHelloKeyShares: the ClientHello parser records the groups of
// the key shares, which crypto/tls's ClientHelloInfo does not show, and a
// malformed key_share is left for crypto/tls to refuse.
func TestClientHelloKeyShares(t *testing.T) {
	const pq, x, p256 = tls.X25519MLKEM768, tls.X25519, tls.CurveP256
	many := make([][]byte, maxKeyShares+2)
	for i := range many {
		many[i] = keyShareEntry(tls.CurveID(0x0a0a+i), 1)
	}
	tests := []struct {
		name string
		raw  []byte
		want []tls.CurveID
	}{
		{name: "Go default client", raw: captureHello(t, &tls.Config{ServerName: registryName}), want: []tls.CurveID{pq, x}},
		{name: "Go client, hybrid only", raw: captureHello(t, &tls.Config{ServerName: registryName, CurvePreferences: []tls.CurveID{pq}}), want: []tls.CurveID{pq}},
		{name: "Go client, X25519 only", raw: captureHello(t, &tls.Config{ServerName: registryName, CurvePreferences: []tls.CurveID{x}}), want: []tls.CurveID{x}},
		{name: "TLS 1.2 client: no key_share", raw: captureHello(t, &tls.Config{ServerName: registryName, MaxVersion: tls.VersionTLS12}), want: []tls.CurveID{}},
		{name: "GREASE first, as Chrome", raw: buildHello(keyShareExt(keyShareEntry(0x2a2a, 1), keyShareEntry(p256, 65))), want: []tls.CurveID{0x2a2a, p256}},
		{name: "more than maxKeyShares: the first kept", raw: buildHello(keyShareExt(many...)), want: []tls.CurveID{0x0a0a, 0x0a0b, 0x0a0c, 0x0a0d, 0x0a0e, 0x0a0f, 0x0a10, 0x0a11}},
		{name: "truncated entry: what came before it", raw: buildHello(keyShareExt(keyShareEntry(x, 32), []byte{0, 23, 0, 65, 1})), want: []tls.CurveID{x}},
		{name: "not even a list", raw: buildHello(ext(extKeyShare, []byte{1})), want: []tls.CurveID{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, err := ReadClientHello(bytes.NewReader(tt.raw), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.shares.list(); !slices.Equal(got, tt.want) {
				t.Errorf("key share groups %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDefaultServeKeyExchanges: without ServeKeyExchanges the node leg
// takes a classical group when the client sent a share for one it
// supports, else leaves crypto/tls's default (which takes the hybrid).
func TestDefaultServeKeyExchanges(t *testing.T) {
	const pq, x, p256 = tls.X25519MLKEM768, tls.X25519, tls.CurveP256
	tests := []struct {
		name              string
		shares, supported []tls.CurveID
		want              []tls.CurveID
	}{
		{name: "hybrid and X25519 shares", shares: []tls.CurveID{pq, x}, supported: []tls.CurveID{pq, x, p256}, want: classicalKeyExchanges},
		{name: "hybrid share only", shares: []tls.CurveID{pq}, supported: []tls.CurveID{pq, p256}, want: nil},
		{name: "hybrid share only, X25519 supported: no retry for it", shares: []tls.CurveID{pq}, supported: []tls.CurveID{pq, x}, want: nil},
		{name: "P-256 share", shares: []tls.CurveID{0x2a2a, p256}, supported: []tls.CurveID{pq, p256}, want: classicalKeyExchanges},
		{name: "a share for a group not listed as supported", shares: []tls.CurveID{x}, supported: []tls.CurveID{pq}, want: nil},
		{name: "no shares (TLS 1.2, or a client asking for a retry)", shares: nil, supported: []tls.CurveID{pq, x}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultServeKeyExchanges(tt.shares, tt.supported); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	r := &Route{ServeKeyExchanges: []tls.CurveID{pq}}
	if got := r.serveKeyExchanges([]tls.CurveID{x}, []tls.CurveID{pq, x}); !slices.Equal(got, r.ServeKeyExchanges) {
		t.Errorf("a route's ServeKeyExchanges gave way to the default: %v", got)
	}
}
