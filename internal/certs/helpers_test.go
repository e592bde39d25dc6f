package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait on a hook: reaching it means the event never
// came, a failure, not a way to synchronise.
const waitLimit = 30 * time.Second

// testPollInterval keeps the stat backstop quick in tests.
const testPollInterval = 20 * time.Millisecond

// testPair is a self-signed certificate for "test.example" with serial,
// valid for serial days, and its PKCS#8 key, both PEM.
func testPair(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	// serverAuth and clientAuth: the pairs serve as serving and as client
	// certificates (NewKeyPair refuses a client certificate without
	// clientAuth).
	l, err := pki.SelfSigned(pki.Serial(serial), pki.CommonName(fmt.Sprintf("pair %d", serial)), pki.SANs("test.example"),
		pki.ExtKeyUsage(x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth),
		pki.Validity(time.Now().Add(-time.Hour), time.Now().Add(time.Duration(serial)*24*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	return l.CertPEM, l.KeyPEM
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// renameOver replaces path the way most tools do: a new file renamed over it.
func renameOver(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// k8sDir lays files out as kubelet's AtomicWriter does for a Secret volume:
// dir/NAME -> ..data/NAME, dir/..data -> ..<timestamp>, and an update
// writes a new timestamped directory and renames a new ..data symlink over
// the old one.
type k8sDir struct {
	t   *testing.T
	dir string
	gen int
	cur string
}

func newK8sDir(t *testing.T, files map[string][]byte) *k8sDir {
	d := &k8sDir{t: t, dir: t.TempDir()}
	d.update(files)
	for name := range files {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(d.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d *k8sDir) path(name string) string { return filepath.Join(d.dir, name) }

func (d *k8sDir) update(files map[string][]byte) {
	t := d.t
	t.Helper()
	d.gen++
	ts := fmt.Sprintf("..2026_01_02_03_04_05.%09d", d.gen)
	if err := os.Mkdir(filepath.Join(d.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		writeFile(t, filepath.Join(d.dir, ts, name), data)
	}
	if err := os.Symlink(ts, filepath.Join(d.dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(d.dir, "..data_tmp"), filepath.Join(d.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if d.cur != "" {
		if err := os.RemoveAll(filepath.Join(d.dir, d.cur)); err != nil {
			t.Fatal(err)
		}
	}
	d.cur = ts
}

// reload is one call of a KeyPair's OnReloadFunc.
type reload struct {
	serial int64 // 0 for a failure
	err    error
}

// reloadRecorder collects OnReloadFunc calls on a channel.
type reloadRecorder struct{ ch chan reload }

func newReloadRecorder() *reloadRecorder { return &reloadRecorder{ch: make(chan reload, 4096)} }

func (r *reloadRecorder) hook(c *tls.Certificate, err error) {
	ev := reload{err: err}
	if c != nil {
		ev.serial = c.Leaf.SerialNumber.Int64()
	}
	select {
	case r.ch <- ev:
	default: // a test that floods the recorder fails by missing its event
	}
}

// waitSuccess waits for a reload to serial and returns it; failures seen
// on the way are counted.
func (r *reloadRecorder) waitSuccess(t *testing.T, serial int64) (failures int) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case ev := <-r.ch:
			if ev.err != nil {
				failures++
				continue
			}
			if ev.serial == serial {
				return failures
			}
		case <-timeout:
			t.Fatalf("no reload to serial %d within %s (%d failures seen)", serial, waitLimit, failures)
		}
	}
}

// waitFailure waits for a failed reload and returns its error.
func (r *reloadRecorder) waitFailure(t *testing.T) error {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case ev := <-r.ch:
			if ev.err != nil {
				return ev.err
			}
			t.Fatalf("reloaded to serial %d; want a failure first", ev.serial)
		case <-timeout:
			t.Fatalf("no failed reload within %s", waitLimit)
		}
	}
}

// runUntilCleanup runs run on a goroutine until the test ends, then
// cancels it and checks that it returns nil.
func runUntilCleanup(t *testing.T, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v; want nil after cancel", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("Run did not return within %s of cancel", waitLimit)
		}
	})
}

// quietLogger keeps tests that do not look at logs quiet.
var quietLogger = slog.New(slog.DiscardHandler)

func newTestLogger() (*slog.Logger, *testkit.LogSink) {
	b := testkit.NewLogSink()
	return b.Logger(), b
}
