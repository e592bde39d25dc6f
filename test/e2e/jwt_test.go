package e2e

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
	"os"
	"path/filepath"
	"strings"
	"time"
)

// jwtSigner signs the token service's JWTs (ES256, x5c header) with a
// key whose self-signed certificate is the registry's rootcertbundle.
type jwtSigner struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
}

func newJWTSigner(dir string) (*jwtSigner, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e token signer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, "", err
	}
	file := filepath.Join(dir, "token-signer.crt")
	err = os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	return &jwtSigner{key: key, cert: cert}, file, err
}

// sign returns a JWT for sub granting every action each scope asks.
func (s *jwtSigner) sign(sub string, scopes []string) string {
	type access struct {
		Type    string   `json:"type"`
		Name    string   `json:"name"`
		Actions []string `json:"actions"`
	}
	acc := []access{}
	for _, sc := range scopes {
		for _, e := range strings.Fields(sc) {
			parts := strings.Split(e, ":")
			if len(parts) >= 3 {
				acc = append(acc, access{Type: parts[0], Name: strings.Join(parts[1:len(parts)-1], ":"), Actions: strings.Split(parts[len(parts)-1], ",")})
			}
		}
	}
	now := time.Now()
	jti := make([]byte, 8)
	_, _ = rand.Read(jti)
	header, _ := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(s.cert.Raw)}})
	claims, _ := json.Marshal(map[string]any{"iss": e2eTokenIssuer, "sub": sub, "aud": e2eTokenService, "exp": now.Add(5 * time.Minute).Unix(),
		"nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(), "jti": base64.RawURLEncoding.EncodeToString(jti), "access": acc})
	enc := base64.RawURLEncoding.EncodeToString
	signed := enc(header) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signed))
	r, sig, err := ecdsa.Sign(rand.Reader, s.key, sum[:])
	if err != nil {
		panic(err)
	}
	out := make([]byte, 64)
	r.FillBytes(out[:32])
	sig.FillBytes(out[32:])
	return signed + "." + enc(out)
}
