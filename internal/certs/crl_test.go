package certs

import (
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit"
)

// crlWorld is a node CA with two node certificates, its bundle and a CRL
// file that revokes nothing yet.
type crlWorld struct {
	ca, other    *pki.Authority
	node1, node2 *x509.Certificate
	dir          *k8sDir
	bundle       *CABundle
}

func newCRLWorld(t *testing.T) *crlWorld {
	t.Helper()
	w := &crlWorld{}
	var err error
	if w.ca, err = pki.NewAuthority("node CA"); err != nil {
		t.Fatal(err)
	}
	if w.other, err = pki.NewAuthority("other CA"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []**x509.Certificate{&w.node1, &w.node2} {
		l, err := w.ca.Issue(pki.CommonName("system:node:n"), pki.ExtKeyUsage(x509.ExtKeyUsageClientAuth))
		if err != nil {
			t.Fatal(err)
		}
		*c = l.Cert
	}
	w.dir = newK8sDir(t, map[string][]byte{"ca.crt": w.ca.PEM, "ca.crl": w.crl(t, w.ca)})
	if w.bundle, err = NewCABundle(CABundleConfig{File: w.dir.path("ca.crt"), Route: "r", Role: RoleClientCA, Logger: quietLogger}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *crlWorld) crl(t *testing.T, ca *pki.Authority, revoked ...*x509.Certificate) []byte {
	t.Helper()
	data, err := ca.CRL(time.Now().UnixNano(), revoked...)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// crlEvents collects CRLConfig.OnReloadFunc calls.
type crlEvents chan error

func (e crlEvents) hook(err error) { e <- err }

func (e crlEvents) wait(t *testing.T, ok bool) error {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case err := <-e:
			if (err == nil) == ok {
				return err
			}
		case <-timeout:
			t.Fatalf("no CRL event (ok=%v) within %s", ok, waitLimit)
		}
	}
}

// TestCRLReload: a CRL written over a Kubernetes ..data swap revokes from
// then on; one signed by another CA is refused and the last good one kept.
func TestCRLReload(t *testing.T) {
	w := newCRLWorld(t)
	reg := prometheus.NewRegistry()
	ev := make(crlEvents, 64)
	c, err := NewCRL(CRLConfig{File: w.dir.path("ca.crl"), CA: w.bundle, Route: "r", Logger: quietLogger,
		Metrics: NewMetrics(reg), PollInterval: testPollInterval, OnReloadFunc: ev.hook})
	if err != nil {
		t.Fatal(err)
	}
	if c.Revoked(w.node1, w.ca.Cert) {
		t.Fatal("node 1 revoked by an empty CRL")
	}
	runUntilCleanup(t, c.Run)

	w.dir.update(map[string][]byte{"ca.crt": w.ca.PEM, "ca.crl": w.crl(t, w.ca, w.node1)})
	ev.wait(t, true)
	if !c.Revoked(w.node1, w.ca.Cert) || c.Revoked(w.node2, w.ca.Cert) {
		t.Errorf("after the swap: node 1 revoked %v (want true), node 2 revoked %v (want false)",
			c.Revoked(w.node1, w.ca.Cert), c.Revoked(w.node2, w.ca.Cert))
	}
	if c.Revoked(w.node1, w.other.Cert) {
		t.Error("a serial listed by the node CA's CRL is revoked for another issuer")
	}

	w.dir.update(map[string][]byte{"ca.crt": w.ca.PEM, "ca.crl": w.crl(t, w.other)})
	if err := ev.wait(t, false); !strings.Contains(err.Error(), "signed by no certificate of the client_ca bundle") {
		t.Errorf("error %v; want it to say the CRL's signer is not in client_ca", err)
	}
	if !c.Revoked(w.node1, w.ca.Cert) {
		t.Error("a refused CRL replaced the last good one")
	}
	lbl := map[string]string{"route": "r", "role": RoleClientCRL}
	if v, _ := testkit.Gathered(t, reg, "snigate_certificate_reload_failures_total", lbl); v < 1 {
		t.Errorf("reload failures %v; want >= 1", v)
	}
	if v, ok := testkit.Gathered(t, reg, "snigate_certificate_expiry_timestamp_seconds", lbl); !ok || v < float64(time.Now().Unix()) {
		t.Errorf("expiry (NextUpdate) %v (present %v); want in the future", v, ok)
	}
}

func TestNewCRLRefuses(t *testing.T) {
	w := newCRLWorld(t)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"another CA's", w.crl(t, w.other), "signed by no certificate of the client_ca bundle"},
		{"not a CRL", w.ca.PEM, `PEM block 1 is "CERTIFICATE"; want only X509 CRL blocks`},
		{"empty", nil, "no X509 CRL PEM block found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "ca.crl")
			writeFile(t, f, tt.data)
			_, err := NewCRL(CRLConfig{File: f, CA: w.bundle, Route: "r", Logger: quietLogger})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewCRL: %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
