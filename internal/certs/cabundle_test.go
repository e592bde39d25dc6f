package certs

import (
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
)

// bundleRecorder collects CABundleConfig.OnReloadFunc calls.
type bundleRecorder struct{ ch chan []*x509.Certificate }

func (r *bundleRecorder) hook(certs []*x509.Certificate, err error) {
	if err != nil {
		certs = nil
	}
	select {
	case r.ch <- certs:
	default:
	}
}

// wait waits for a reload (ok) or a failure (!ok).
func (r *bundleRecorder) wait(t *testing.T, ok bool) []*x509.Certificate {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case certs := <-r.ch:
			if (certs != nil) == ok {
				return certs
			}
		case <-timeout:
			t.Fatalf("no CA bundle event (ok=%v) within %s", ok, waitLimit)
		}
	}
}

// bundleRotation writes a CA file holding certA and returns how to rotate it.
type bundleRotation struct {
	name  string
	setup func(t *testing.T) (file string, rotate func(data []byte))
}

// bundleRotations are the ways a CA file is replaced: in place, renamed over, a Kubernetes ..data swap.
func bundleRotations(certA []byte) []bundleRotation {
	return []bundleRotation{
		{"in-place rewrite", func(t *testing.T) (string, func([]byte)) {
			f := filepath.Join(t.TempDir(), "ca.crt")
			writeFile(t, f, certA)
			return f, func(d []byte) { writeFile(t, f, d) }
		}},
		{"rename-over", func(t *testing.T) (string, func([]byte)) {
			f := filepath.Join(t.TempDir(), "ca.crt")
			writeFile(t, f, certA)
			return f, func(d []byte) { renameOver(t, f, d) }
		}},
		{"kubernetes ..data symlink swap", func(t *testing.T) (string, func([]byte)) {
			d := newK8sDir(t, map[string][]byte{"ca.crt": certA})
			return d.path("ca.crt"), func(data []byte) { d.update(map[string][]byte{"ca.crt": data}) }
		}},
	}
}

func TestCABundleReload(t *testing.T) {
	certA, _ := testPair(t, 1)
	certB, _ := testPair(t, 2)
	certC, _ := testPair(t, 3)
	bundleBC := append(append([]byte("# bundle\n"), certB...), certC...)
	tests := bundleRotations(certA)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, rotate := tt.setup(t)
			reg := prometheus.NewRegistry()
			rec := &bundleRecorder{ch: make(chan []*x509.Certificate, 1024)}
			b, err := NewCABundle(CABundleConfig{File: file, Route: "r", Role: RoleUpstreamCA, Logger: quietLogger,
				Metrics: NewMetrics(reg), PollInterval: testPollInterval, OnReloadFunc: rec.hook})
			if err != nil {
				t.Fatal(err)
			}
			a := mustParse(t, certA)
			if !b.Pool().Equal(poolOf(a)) {
				t.Fatal("initial pool is not the file's certificate")
			}
			runUntilCleanup(t, b.Run)
			before := b.Pool()

			rotate([]byte("-----BEGIN CERTIFICATE-----\ntruncated")) // a bad write
			rec.wait(t, false)
			if b.Pool() != before {
				t.Fatal("a bad write replaced the pool; want the last good bundle kept")
			}

			rotate(bundleBC)
			got := rec.wait(t, true)
			want := poolOf(mustParse(t, certB), mustParse(t, certC))
			if len(got) != 2 || !b.Pool().Equal(want) {
				t.Fatalf("pool after rotation holds %d certificates; want B and C", len(got))
			}
			if !before.Equal(poolOf(a)) {
				t.Error("a reload changed a pool already handed out")
			}
			lbl := map[string]string{"route": "r", "role": RoleUpstreamCA}
			if v, _ := testkit.Gathered(t, reg, "snigate_certificate_expiry_timestamp_seconds", lbl); v != float64(earliestExpiry(got).Unix()) {
				t.Errorf("expiry metric %v; want the earliest NotAfter %v", v, earliestExpiry(got).Unix())
			}
			if v, _ := testkit.Gathered(t, reg, "snigate_certificate_reload_failures_total", lbl); v < 1 {
				t.Errorf("failures counter %v; want >= 1", v)
			}
		})
	}
}

func mustParse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	certs, err := parseBundle(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

func poolOf(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

func TestNewCABundleErrors(t *testing.T) {
	certA, keyA := testPair(t, 1)
	dir := t.TempDir()
	at := func(n string) string { return filepath.Join(dir, n) }
	writeFile(t, at("empty"), nil)
	writeFile(t, at("with-key"), append(append([]byte{}, certA...), keyA...))
	writeFile(t, at("ok"), certA)
	tests := []struct {
		name string
		cfg  CABundleConfig
		want []string
	}{
		{"missing", CABundleConfig{File: at("nope"), Role: RoleUpstreamCA}, []string{at("nope"), "no such file"}},
		{"no PEM", CABundleConfig{File: at("empty"), Role: RoleUpstreamCA}, []string{at("empty"), "no CERTIFICATE PEM block"}},
		{"a key inside", CABundleConfig{File: at("with-key"), Role: RoleUpstreamCA}, []string{at("with-key"), `block 2 is "PRIVATE KEY"`}},
		{"bad role", CABundleConfig{File: at("ok"), Role: "ca"}, []string{`role "ca"`}},
		{"no file", CABundleConfig{Role: RoleServeCA}, []string{"want a file name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewCABundle(tt.cfg)
			if err == nil {
				t.Fatal("NewCABundle succeeded; want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, body := range [][]byte{certA, keyA} {
				if line := strings.Split(string(body), "\n")[1]; strings.Contains(err.Error(), line) {
					t.Errorf("error %q quotes file contents", err)
				}
			}
		})
	}
}
