package certs

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIssueNode(t *testing.T) {
	caDir, out := t.TempDir(), filepath.Join(t.TempDir(), "nodes")
	if err := InitCA(InitCAConfig{Dir: caDir}); err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, err := IssueNode(IssueNodeConfig{Name: "worker-1.example", CADir: caDir, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	c := pair.Leaf
	if c.Subject.CommonName != "system:node:worker-1.example" || len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject %q; want CN=system:node:worker-1.example, O=system:nodes", c.Subject)
	}
	caPEM, err := os.ReadFile(filepath.Join(caDir, CACertFileName))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the node certificate does not verify as a client certificate of the CA: %v", err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("the node certificate verifies as a server certificate; want clientAuth only")
	}
	if d := time.Until(c.NotAfter); d < DefaultNodeValidity-time.Hour || d > DefaultNodeValidity {
		t.Errorf("valid for %s more; want about %s", d, DefaultNodeValidity)
	}
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v (%v); want 0600", fi.Mode().Perm(), err)
	}
	if _, _, err := IssueNode(IssueNodeConfig{Name: "worker-1.example", CADir: caDir, Out: out}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second issue without Force: %v; want a refusal naming --force", err)
	}
}

func TestIssueNodeRefuses(t *testing.T) {
	caDir := t.TempDir()
	if err := InitCA(InitCAConfig{Dir: caDir}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, node, caDir, want string
	}{
		{"empty name", "", caDir, "want a Kubernetes node name"},
		{"upper case", "Worker", caDir, "want a Kubernetes node name"},
		{"leading dash", "-w", caDir, "want a Kubernetes node name"},
		{"path", "../w", caDir, "want a Kubernetes node name"},
		{"no CA", "w1", t.TempDir(), "load the CA (snigate ca init --out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := IssueNode(IssueNodeConfig{Name: tt.node, CADir: tt.caDir, Out: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("IssueNode: %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
