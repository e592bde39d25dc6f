package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

// TestVerifyAgainst: a full handshake is verified against the bundle's
// current roots; a resumed one was verified when it was established.
func TestVerifyAgainst(t *testing.T) {
	w := newWorld(t, "")
	leaf := w.leaf("registry.test")
	cert, err := x509.ParseCertificate(leaf.Certificate[0])
	must(t, err)
	roots := w.ca.Pool()
	verify := verifyAgainst(func() *x509.CertPool { return roots })
	tests := []struct {
		name string
		cs   tls.ConnectionState
		ok   bool
	}{
		{name: "trusted", cs: tls.ConnectionState{ServerName: "registry.test", PeerCertificates: []*x509.Certificate{cert}}, ok: true},
		{name: "wrong name", cs: tls.ConnectionState{ServerName: "other.test", PeerCertificates: []*x509.Certificate{cert}}},
		{name: "no certificate", cs: tls.ConnectionState{ServerName: "registry.test"}},
		{name: "resumed", cs: tls.ConnectionState{ServerName: "registry.test", DidResume: true}, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := verify(tt.cs); (err == nil) != tt.ok {
				t.Errorf("verify = %v, want ok %v", err, tt.ok)
			}
		})
	}
	roots = x509.NewCertPool() // the CA bundle rotated to one without our CA
	if err := verify(tests[0].cs); err == nil {
		t.Error("a full handshake verified against roots that no longer hold the CA")
	}
}
