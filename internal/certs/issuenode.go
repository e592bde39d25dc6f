package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultNodeValidity is how long a certificate IssueNode makes is valid
// when IssueNodeConfig.Validity is 0 (a kubelet's client certificate is
// valid a year too, and rotated before it expires).
const DefaultNodeValidity = 365 * 24 * time.Hour

// IssueNodeConfig configures IssueNode (`snigate ca issue-node NAME`).
type IssueNodeConfig struct {
	Name     string        // the node's name: CN=system:node:NAME; required
	CADir    string        // holds ca.crt and ca.key (snigate ca init); required
	Out      string        // where NAME.crt and NAME.key go; created 0700 if missing; required
	Validity time.Duration // 0: DefaultNodeValidity
	Force    bool          // overwrite existing files; false: refuse
	Now      func() time.Time
}

// IssueNode makes a kubelet-style client certificate for one node, signed
// by the CA in CADir: CN=system:node:NAME, O=system:nodes, extended key
// usage clientAuth only, an ECDSA P-256 key. It writes Out/NAME.crt
// (0644, the certificate) and Out/NAME.key (0600, PKCS#8) and returns
// their paths. A route whose serve.client_ca is CADir/ca.crt and whose
// client_names include "system:node:*" accepts it.
func IssueNode(cfg IssueNodeConfig) (certPath, keyPath string, err error) {
	if err := checkNodeName(cfg.Name); err != nil {
		return "", "", err
	}
	if cfg.CADir == "" || cfg.Out == "" {
		return "", "", errors.New("want the CA's directory (--ca DIR) and an output directory (--out DIR)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Validity <= 0 {
		cfg.Validity = DefaultNodeValidity
	}
	ca, err := tls.LoadX509KeyPair(filepath.Join(cfg.CADir, CACertFileName), filepath.Join(cfg.CADir, CAKeyFileName))
	if err != nil {
		return "", "", fmt.Errorf("load the CA (snigate ca init --out %s): %w", cfg.CADir, err)
	}
	certPath, keyPath = filepath.Join(cfg.Out, cfg.Name+".crt"), filepath.Join(cfg.Out, cfg.Name+".key")
	if !cfg.Force {
		if err := refuseExisting(certPath, keyPath); err != nil {
			return "", "", errors.New(strings.TrimPrefix(err.Error(), "ca init: "))
		}
	}
	certPEM, keyPEM, err := newNodeCert(&ca, cfg.Name, cfg.Now(), cfg.Validity)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(cfg.Out, 0o700); err != nil {
		return "", "", err
	}
	return certPath, keyPath, writeFiles([]fileContent{{keyPath, keyPEM, 0o600}, {certPath, certPEM, 0o644}})
}

// checkNodeName accepts a Kubernetes node name: a DNS subdomain (RFC 1123)
// of lower-case letters, digits, '-' and '.', at most 253 bytes.
func checkNodeName(name string) error {
	const what = "NAME: want a Kubernetes node name (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)"
	if name == "" || len(name) > 253 {
		return fmt.Errorf("%s, got %q", what, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (c != '-' && c != '.' || i == 0 || i == len(name)-1) {
			return fmt.Errorf("%s, got %q", what, name)
		}
	}
	return nil
}

func mkdirOut(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return nil
}

// newNodeCert generates the node's key and certificate signed by ca.
func newNodeCert(ca *tls.Certificate, name string, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Leaf, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign the node certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the node key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}

// IssueNodeSummary is what `snigate ca issue-node` prints: the files, and
// how a node and the gateway use them.
func IssueNodeSummary(name, caDir, certPath, keyPath string) string {
	caPath := filepath.Join(caDir, CACertFileName)
	if abs, err := filepath.Abs(caPath); err == nil {
		caPath = abs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "wrote %s (certificate of system:node:%s, 0644) and %s (private key, 0600)\n\n", certPath, name, keyPath)
	fmt.Fprintf(&b, "On node %s, copy both next to hosts.toml and name them in it:\n\n", name)
	fmt.Fprintf(&b, "  /etc/containerd/certs.d/REGISTRY/hosts.toml:\n    [host.\"https://REGISTRY\"]\n      ca = \"ca.crt\"\n")
	fmt.Fprintf(&b, "      client = [[\"%s\", \"%s\"]]\n\n", filepath.Base(certPath), filepath.Base(keyPath))
	fmt.Fprintf(&b, "On the gateway, the route's serve section:\n\n    client_ca: %s\n    client_names: [\"system:node:*\"]\n", caPath)
	return b.String()
}
