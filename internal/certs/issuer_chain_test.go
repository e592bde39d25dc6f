package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"

	"github.com/snigate/snigate/internal/pki"
)

// TestMintedChainOmitsTheRoot: a minted leaf used to travel with its CA's
// certificate even when that CA is a root (snigate ca init makes one),
// which every node must already trust: bytes on every full handshake and
// work in the node's chain building for nothing. A root CA now sends the
// leaf alone; an intermediate CA still follows its leaf, so that nodes
// trusting only the root verify it.
func TestMintedChainOmitsTheRoot(t *testing.T) {
	root, err := pki.NewAuthority("bridge root")
	if err != nil {
		t.Fatal(err)
	}
	inter, err := root.Intermediate("bridge issuing CA")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		ca        *pki.Authority
		wantChain []*x509.Certificate // after the leaf
	}{
		{name: "root CA: the leaf alone", ca: root},
		{name: "intermediate CA: the leaf, then the intermediate", ca: inter, wantChain: []*x509.Certificate{inter.Cert}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tt.ca.WriteCA(dir, "ca"); err != nil {
				t.Fatal(err)
			}
			m, err := NewMinter(MinterConfig{CACertFile: filepath.Join(dir, CACertFileName), CAKeyFile: filepath.Join(dir, CAKeyFileName),
				Route: "registry", PollInterval: testPollInterval, Logger: quietLogger})
			if err != nil {
				t.Fatal(err)
			}
			addr := tlsServer(t, m.GetCertificate)
			d := &tls.Dialer{Config: &tls.Config{ServerName: "registry.example.com", RootCAs: root.Pool()}}
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				t.Fatalf("a node trusting the root: %v", err)
			}
			defer c.Close()
			got := c.(*tls.Conn).ConnectionState().PeerCertificates[1:]
			if len(got) != len(tt.wantChain) {
				t.Fatalf("the server sent %d certificates after the leaf, want %d", len(got), len(tt.wantChain))
			}
			for i := range got {
				if !got[i].Equal(tt.wantChain[i]) {
					t.Errorf("certificate %d after the leaf is %s, want %s", i+1, got[i].Subject, tt.wantChain[i].Subject)
				}
			}
		})
	}
}
