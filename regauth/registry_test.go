package regauth

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
	"golang.org/x/crypto/bcrypt"
)

// startLimit bounds a process start or a first answer on a busy machine;
// it is a failure bound, never a synchronisation.
const startLimit = 30 * time.Second

// testPKI is the CA every test server's certificate comes from.
type testPKI struct {
	ca *pki.Authority
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := pki.NewAuthority("regauth test CA")
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{ca: ca}
}

// serverTLS is a server configuration for names.
func (p *testPKI) serverTLS(t *testing.T, names ...string) *tls.Config {
	t.Helper()
	c, _, _, err := p.ca.Leaf("server", names...)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
}

// transport is a client transport trusting the test CA.
func (p *testPKI) transport(t *testing.T) *http.Transport {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.ca.Pool(), MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// registry is a docker-registry process on 127.0.0.1.
type registry struct {
	addr string // 127.0.0.1:port
}

// startRegistry runs Debian's docker-registry over TLS on 127.0.0.1:0
// with authYAML as its auth section, and waits for its "listening on"
// line.
func startRegistry(t *testing.T, p *testPKI, authYAML string) *registry {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Skip("docker-registry is not installed (test/deps.sh installs it)")
	}
	dir := t.TempDir()
	_, certPEM, keyPEM, err := p.ca.Leaf("registry", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "registry.crt"), certPEM)
	writeTestFile(t, filepath.Join(dir, "registry.key"), keyPEM)
	cfg := fmt.Sprintf(`version: 0.1
log: {level: info, formatter: text}
storage: {filesystem: {rootdirectory: %[1]s/data}, delete: {enabled: true}}
http:
  addr: 127.0.0.1:0
  secret: regauth-test
  tls: {certificate: %[1]s/registry.crt, key: %[1]s/registry.key}
auth:
%[2]s
`, dir, authYAML)
	path := filepath.Join(dir, "config.yml")
	writeTestFile(t, path, []byte(cfg))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", path)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait(); _ = pw.Close() })
	addr := make(chan string, 1)
	go scanListening(pr, addr)
	select {
	case a := <-addr:
		return &registry{addr: a}
	case <-time.After(startLimit):
		t.Fatal("docker-registry did not log its listening address")
	}
	return nil
}

// scanListening sends the address of docker-registry's "listening on"
// line, then drains its output.
func scanListening(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), `msg="listening on `); ok {
			a, _, _ := strings.Cut(rest, `"`)
			a, _, _ = strings.Cut(a, ", tls")
			addr <- a
			break
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// writeHtpasswd writes an htpasswd file of bcrypt hashes.
func writeHtpasswd(t *testing.T, path string, users map[string]string) {
	t.Helper()
	var b strings.Builder
	for u, pw := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%s\n", u, h)
	}
	writeTestFile(t, path, []byte(b.String()))
}

func writeTestFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// certPool is a pool of one certificate.
func certPool(c *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}
