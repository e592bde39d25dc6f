package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildSnigate builds ../cmd/snigate from the gateway's module. Without
// SNIGATE_REQUIRE_E2E a tree that does not build yet skips the test (the
// gateway's own tests report that); with it, it fails.
func buildSnigate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "snigate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/snigate")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("SNIGATE_REQUIRE_E2E") != "" {
			t.Fatalf("go build ./cmd/snigate: %v\n%s", err, out)
		}
		t.Skipf("go build ./cmd/snigate failed, skipping the real `snigate check`: %v\n%s", err, out)
	}
	return bin
}

// testPKI writes a CA, a serving pair for names and a client pair into dir.
type testPKI struct{ caCert, caKey, serveCert, serveKey, clientCert, clientKey string }

func newTestPKI(t *testing.T, dir string, names []string) testPKI {
	t.Helper()
	p := testPKI{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		serveCert: filepath.Join(dir, "serve.crt"), serveKey: filepath.Join(dir, "serve.key"),
		clientCert: filepath.Join(dir, "client.crt"), clientKey: filepath.Join(dir, "client.key"),
	}
	caKey := newKey(t)
	caTmpl := certTemplate(1, "snigate test CA")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caDER := sign(t, caTmpl, caTmpl, caKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	writePair(t, p.caCert, p.caKey, caDER, caKey)

	serve := certTemplate(2, names[0])
	serve.DNSNames = names
	serve.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	k := newKey(t)
	writePair(t, p.serveCert, p.serveKey, sign(t, serve, ca, k, caKey), k)

	client := certTemplate(3, "edge.example.test")
	client.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	k = newKey(t)
	writePair(t, p.clientCert, p.clientKey, sign(t, client, ca, k, caKey), k)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func certTemplate(serial int64, cn string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
}

func sign(t *testing.T, tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePair(t *testing.T, certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) {
	t.Helper()
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// localCopy rewrites the configuration's certificate paths to test files.
func localCopy(t *testing.T, yamlText string, cfg *gatewayConfig) string {
	t.Helper()
	dir := t.TempDir()
	p := newTestPKI(t, dir, cfg.routedNames())
	repl := map[string]string{}
	for _, r := range cfg.Routes {
		if s := r.Serve; s != nil {
			repl[s.Cert], repl[s.Key], repl[s.CACert], repl[s.CAKey] = p.serveCert, p.serveKey, p.caCert, p.caKey
		}
		if u := r.UpstreamTLS; u != nil {
			repl[u.Cert], repl[u.Key], repl[u.CA] = p.clientCert, p.clientKey, p.caCert
		}
	}
	delete(repl, "")
	for from, to := range repl {
		yamlText = strings.ReplaceAll(yamlText, from, to)
	}
	file := filepath.Join(dir, "snigate.yaml")
	if err := os.WriteFile(file, []byte(yamlText), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestExampleConfigsPassSnigateCheck runs the real `snigate check` on every
// configuration this tree ships (certificate files replaced by test ones).
func TestExampleConfigsPassSnigateCheck(t *testing.T) {
	examples := map[string]string{bastionConfig: string(readFile(t, bastionConfig))}
	for _, dir := range kustomizationDirs(t) {
		b := buildKustomization(t, dir)
		for _, cm := range find[coreConfigMap](b) {
			if cm.Name == configMapName {
				examples[dir+" ConfigMap "+cm.Name] = cm.Data[configKey]
			}
		}
	}
	bin := buildSnigate(t)
	for name, text := range examples {
		t.Run(name, func(t *testing.T) {
			cfg, err := parseGatewayConfig([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "check", "-c", localCopy(t, text, cfg)).CombinedOutput()
			if err != nil {
				t.Fatalf("snigate check: %v\n%s", err, out)
			}
		})
	}
}
