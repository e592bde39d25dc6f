package certs

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
)

// pairFiles is where a test keeps a key pair, and how it rotates it.
type pairFiles struct {
	cert, key string
	rotate    func(certPEM, keyPEM []byte)
}

func TestKeyPairReload(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, certPEM, keyPEM []byte) pairFiles
	}{
		{"in-place rewrite, key first", func(t *testing.T, c, k []byte) pairFiles {
			p := plainFiles(t, c, k)
			p.rotate = func(c, k []byte) { writeFile(t, p.key, k); writeFile(t, p.cert, c) }
			return p
		}},
		{"in-place rewrite, cert first", func(t *testing.T, c, k []byte) pairFiles {
			p := plainFiles(t, c, k)
			p.rotate = func(c, k []byte) { writeFile(t, p.cert, c); writeFile(t, p.key, k) }
			return p
		}},
		{"rename-over", func(t *testing.T, c, k []byte) pairFiles {
			p := plainFiles(t, c, k)
			p.rotate = func(c, k []byte) { renameOver(t, p.key, k); renameOver(t, p.cert, c) }
			return p
		}},
		{"kubernetes ..data symlink swap", func(t *testing.T, c, k []byte) pairFiles {
			d := newK8sDir(t, map[string][]byte{"tls.crt": c, "tls.key": k})
			return pairFiles{cert: d.path("tls.crt"), key: d.path("tls.key"), rotate: func(c, k []byte) {
				d.update(map[string][]byte{"tls.crt": c, "tls.key": k})
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certA, keyA := testPair(t, 1)
			certB, keyB := testPair(t, 2)
			p := tt.setup(t, certA, keyA)
			reg := prometheus.NewRegistry()
			metrics := NewMetrics(reg)
			rec := newReloadRecorder()
			kp, err := NewKeyPair(KeyPairConfig{CertFile: p.cert, KeyFile: p.key, Route: "r", Role: RoleServe, Logger: quietLogger,
				Metrics: metrics, PollInterval: testPollInterval, OnReloadFunc: rec.hook})
			if err != nil {
				t.Fatal(err)
			}
			assertServing(t, kp, 1)
			runUntilCleanup(t, kp.Run)

			p.rotate(certB, keyB)
			rec.waitSuccess(t, 2)
			assertServing(t, kp, 2)
			lbl := map[string]string{"route": "r", "role": RoleServe}
			if got, _ := testkit.Gathered(t, reg, "snigate_certificate_expiry_timestamp_seconds", lbl); got != float64(kp.Leaf().NotAfter.Unix()) {
				t.Errorf("expiry metric = %v; want %v (NotAfter of the new certificate)", got, kp.Leaf().NotAfter.Unix())
			}
			if got, _ := testkit.Gathered(t, reg, "snigate_certificate_reloads_total", lbl); got < 1 {
				t.Errorf("reloads counter = %v; want >= 1", got)
			}
		})
	}
}

func plainFiles(t *testing.T, certPEM, keyPEM []byte) pairFiles {
	dir := t.TempDir()
	p := pairFiles{cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key")}
	writeFile(t, p.cert, certPEM)
	writeFile(t, p.key, keyPEM)
	return p
}

func assertServing(t *testing.T, kp *KeyPair, serial int64) {
	t.Helper()
	c, err := kp.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || c.Leaf.SerialNumber.Int64() != serial {
		t.Fatalf("GetCertificate = serial %v, %v; want serial %d", c.Leaf.SerialNumber, err, serial)
	}
	c, err = kp.GetClientCertificate(&tls.CertificateRequestInfo{})
	if err != nil || c.Leaf.SerialNumber.Int64() != serial {
		t.Fatalf("GetClientCertificate = serial %v, %v; want serial %d", c.Leaf.SerialNumber, err, serial)
	}
}

// A rotation that writes the new certificate before its key makes
// certinel's watch loop return on the failed load. Run must count the
// failure, keep serving the old pair, and pick up the new pair once the key
// arrives.
func TestKeyPairRecoversFromCertBeforeKey(t *testing.T) {
	certA, keyA := testPair(t, 1)
	certB, keyB := testPair(t, 2)
	p := plainFiles(t, certA, keyA)
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	rec := newReloadRecorder()
	log, logs := newTestLogger()
	kp, err := NewKeyPair(KeyPairConfig{CertFile: p.cert, KeyFile: p.key, Route: "r", Role: RoleClient,
		Logger: log, Metrics: metrics, PollInterval: testPollInterval, OnReloadFunc: rec.hook})
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, kp.Run)

	renameOver(t, p.cert, certB)
	if err := rec.waitFailure(t); !strings.Contains(err.Error(), "does not match") || !strings.Contains(err.Error(), p.key) {
		t.Errorf("failure = %v; want the mismatch, naming the key file", err)
	}
	assertServing(t, kp, 1)
	if got, _ := testkit.Gathered(t, reg, "snigate_certificate_reload_failures_total", map[string]string{"route": "r", "role": RoleClient}); got < 1 {
		t.Errorf("failures counter = %v; want >= 1", got)
	}

	renameOver(t, p.key, keyB)
	rec.waitSuccess(t, 2)
	assertServing(t, kp, 2)

	out := logs.String()
	for _, want := range []string{"certificate reload failed", "certificate reloaded", "serial=2", "not_after="} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	assertNoKeyMaterial(t, out, keyA, keyB)
}

func assertNoKeyMaterial(t *testing.T, out string, keys ...[]byte) {
	t.Helper()
	if strings.Contains(out, "PRIVATE KEY") {
		t.Errorf("logs contain a PEM private key:\n%s", out)
	}
	for _, k := range keys {
		b, _ := pem.Decode(k)
		if enc := base64.StdEncoding.EncodeToString(b.Bytes); strings.Contains(out, enc[:32]) {
			t.Errorf("logs contain key bytes:\n%s", out)
		}
	}
}

func TestNewKeyPairErrors(t *testing.T) {
	certA, keyA := testPair(t, 1)
	_, keyB := testPair(t, 2)
	dir := t.TempDir()
	files := map[string][]byte{"a.crt": certA, "a.key": keyA, "b.key": keyB, "junk": []byte("not pem\n")}
	for name, data := range files {
		writeFile(t, filepath.Join(dir, name), data)
	}
	at := func(n string) string { return filepath.Join(dir, n) }
	tests := []struct {
		name       string
		cfg        KeyPairConfig
		wantInErr  []string
		wantNoPair bool
	}{
		{"missing key file", KeyPairConfig{CertFile: at("a.crt"), KeyFile: at("nope.key"), Role: RoleServe},
			[]string{at("a.crt"), at("nope.key"), "no such file"}, true},
		{"key of another pair", KeyPairConfig{CertFile: at("a.crt"), KeyFile: at("b.key"), Role: RoleServe},
			[]string{at("b.key"), "does not match"}, true},
		{"cert and key swapped", KeyPairConfig{CertFile: at("a.key"), KeyFile: at("a.crt"), Role: RoleServe},
			[]string{at("a.key"), "switched"}, true},
		{"not PEM", KeyPairConfig{CertFile: at("junk"), KeyFile: at("a.key"), Role: RoleServe},
			[]string{at("junk"), "want PEM"}, true},
		{"no key file", KeyPairConfig{CertFile: at("a.crt"), Role: RoleServe},
			[]string{"want both a certificate and a key file"}, true},
		{"bad role", KeyPairConfig{CertFile: at("a.crt"), KeyFile: at("a.key"), Role: "server"},
			[]string{`role "server"`, `"serve"`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kp, err := NewKeyPair(tt.cfg)
			if err == nil {
				t.Fatalf("NewKeyPair succeeded (%v); want an error", kp.Leaf().Subject)
			}
			for _, w := range tt.wantInErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "unable to load") {
				t.Errorf("error %q keeps certinel's wrapping", err)
			}
		})
	}
}

func TestKeyPairMetricsOnLoadAndDeleteRoute(t *testing.T) {
	certA, keyA := testPair(t, 3)
	p := plainFiles(t, certA, keyA)
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	kp, err := NewKeyPair(KeyPairConfig{CertFile: p.cert, KeyFile: p.key, Route: "gone", Role: RoleClient, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	lbl := map[string]string{"route": "gone", "role": RoleClient}
	if got, _ := testkit.Gathered(t, reg, "snigate_certificate_expiry_timestamp_seconds", lbl); got != float64(kp.Leaf().NotAfter.Unix()) {
		t.Errorf("expiry on load = %v; want %v", got, kp.Leaf().NotAfter.Unix())
	}
	metrics.DeleteRoute("gone")
	if _, ok := testkit.Gathered(t, reg, "snigate_certificate_expiry_timestamp_seconds", lbl); ok {
		t.Error("expiry series left after DeleteRoute")
	}
	var nilMetrics *Metrics
	nilMetrics.DeleteRoute("x") // a nil *Metrics records nothing and does not panic
	nilMetrics.setExpiry("x", RoleServe, time.Now())
}

func TestKeyPairRunReturnsOnCancel(t *testing.T) {
	certA, keyA := testPair(t, 1)
	p := plainFiles(t, certA, keyA)
	kp, err := NewKeyPair(KeyPairConfig{CertFile: p.cert, KeyFile: p.key, Role: RoleServe})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- kp.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v; want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not return after cancel")
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		name     string
		min, max time.Duration
		calls    int
		want     []time.Duration
	}{
		{"doubles to the cap", 100 * time.Millisecond, 500 * time.Millisecond, 5,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}},
		{"defaults reach 30s", DefaultRetryMin, DefaultRetryMax, 11,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
				1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 12800 * time.Millisecond,
				25600 * time.Millisecond, 30 * time.Second, 30 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := backoff{min: tt.min, max: tt.max}
			for i := range tt.calls {
				if got := b.next(); got != tt.want[i] {
					t.Fatalf("next #%d = %s; want %s", i+1, got, tt.want[i])
				}
			}
			b.reset()
			if got := b.next(); got != tt.min {
				t.Errorf("after reset next = %s; want %s", got, tt.min)
			}
		})
	}
}
