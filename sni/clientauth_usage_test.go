package sni

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// TestWrongUsageNamesWhatIsAtFault: a node certificate refused for its
// extended key usage is blamed when it lacks clientAuth itself; when it
// allows client authentication and the CA above it restricts its usage
// without clientAuth, the message names serve.client_ca (every node is
// refused then). Before, both said the node's certificate lacked
// clientAuth, which sent the operator to reissue certificates that were
// fine.
func TestWrongUsageNamesWhatIsAtFault(t *testing.T) {
	tests := []struct {
		name           string
		caEKU, leafEKU []x509.ExtKeyUsage
		want, wantNot  string
	}{
		{name: "leaf without clientAuth", caEKU: nil, leafEKU: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			want: "lacks the clientAuth extended key usage: issue it as a client certificate", wantNot: "serve.client_ca"},
		{name: "CA restricted to serverAuth", caEKU: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			leafEKU: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			want:    "use a client_ca that may issue client certificates", wantNot: "issue it as a client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, caKey := usageCert(t, "node CA", true, tt.caEKU, nil, nil)
			leaf, _ := usageCert(t, "system:node:w1", false, tt.leafEKU, ca, caKey)
			pool := x509.NewCertPool()
			pool.AddCert(ca)
			_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			if err == nil {
				t.Fatal("x509 accepted the chain; want an incompatible usage")
			}
			got := verifyError(leaf, err)
			var ce *clientAuthError
			if !errors.As(got, &ce) || ce.reason != reasonWrongUsage {
				t.Fatalf("verifyError = %v, want reason %s", got, reasonWrongUsage)
			}
			if !strings.Contains(got.Error(), tt.want) || strings.Contains(got.Error(), tt.wantNot) {
				t.Errorf("message %q: want %q, not %q", got, tt.want, tt.wantNot)
			}
		})
	}
}

func usageCert(tb testing.TB, cn string, isCA bool, eku []x509.ExtKeyUsage, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: eku, BasicConstraintsValid: true, IsCA: isCA,
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if isCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c, key
}
