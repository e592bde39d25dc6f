package distribution

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RotateKey makes a new ES256 signing key and its self-signed
// certificate, written to a new file whose path it returns: the first is
// the registry's rootcertbundle; a later one is a key the registry never
// saw.
func (ts *TokenService) RotateKey(tb testing.TB) string {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: ts.o.SignerName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(tb.TempDir(), "token.crt")
	writeFile(tb, file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.key, ts.cert = key, cert
	return file
}

type accessEntry struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// access grants what scopes ask: everything to a user, pull of public/
// repositories to anonymous.
func access(scopes []string, user string) []accessEntry {
	out := []accessEntry{}
	for _, s := range scopes {
		for _, e := range strings.Fields(s) {
			parts := strings.Split(e, ":")
			if len(parts) < 3 {
				continue
			}
			name, acts := strings.Join(parts[1:len(parts)-1], ":"), strings.Split(parts[len(parts)-1], ",")
			if user == "" {
				if !strings.HasPrefix(name, "public/") {
					continue
				}
				acts = []string{"pull"}
			}
			out = append(out, accessEntry{Type: parts[0], Name: name, Actions: acts})
		}
	}
	return out
}

// sign makes an ES256 JWT with an x5c header; expired: one the registry
// refuses as expired.
func (ts *TokenService) sign(key *ecdsa.PrivateKey, cert *x509.Certificate, sub string, acc []accessEntry, expired bool) string {
	now := time.Now()
	exp := now.Add(ts.ExpiresIn())
	if expired {
		exp = now.Add(-time.Hour) // beyond the registry's leeway
	}
	jti := make([]byte, 8)
	_, _ = rand.Read(jti)
	header, _ := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(cert.Raw)}})
	claims, _ := json.Marshal(map[string]any{"iss": ts.o.Issuer, "sub": sub, "aud": ts.o.Service, "exp": exp.Unix(),
		"nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(), "jti": b64url(jti), "access": acc})
	signed := b64url(header) + "." + b64url(claims)
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		panic(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + b64url(sig)
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
