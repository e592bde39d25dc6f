package httpbridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// distribution is a docker-registry (distribution 2.8, the Debian
// package the end-to-end tests use) behind mTLS on 127.0.0.1, with a
// client that talks to it directly (as the edge).
type distribution struct {
	addr   string
	client *http.Client
}

// startDistribution runs docker-registry with the test PKI's registry
// certificate, requiring the CA's client certificates; the test is
// skipped where it is not installed.
func startDistribution(t *testing.T, p *testPKI) *distribution {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Skip("docker-registry is not installed (test/deps.sh installs it)")
	}
	dir := t.TempDir()
	cfg := writeDistributionConfig(t, p, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", cfg)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait(); _ = pw.Close() })
	addr := make(chan string, 1)
	go scanListening(pr, addr)
	d := &distribution{client: &http.Client{Transport: &http.Transport{TLSClientConfig: p.edgeTLS()}}}
	t.Cleanup(d.client.CloseIdleConnections)
	select {
	case d.addr = <-addr:
	case <-time.After(3 * waitLimit): // a failure bound for a process start on a busy machine
		t.Fatal("docker-registry did not log its listening address")
	}
	return d
}

// writeDistributionConfig writes the registry's certificate, key, CA and
// config.yml (listening on 127.0.0.1:0) to dir.
func writeDistributionConfig(t *testing.T, p *testPKI, dir string) string {
	t.Helper()
	_, certPEM, keyPEM, err := p.ca.Leaf("registry", registryName, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"registry.crt": certPEM, "registry.key": keyPEM, "ca.crt": p.ca.PEM}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`version: 0.1
log: {level: info, formatter: text}
storage: {filesystem: {rootdirectory: %[1]s/data}}
http:
  addr: 127.0.0.1:0
  secret: httpbridge-test
  tls: {certificate: %[1]s/registry.crt, key: %[1]s/registry.key, clientcas: [%[1]s/ca.crt]}
`, dir)
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
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

// pushBlob uploads b to repo directly (POST, then PUT with the digest)
// and returns its digest.
func (d *distribution) pushBlob(t *testing.T, repo string, b []byte) string {
	t.Helper()
	sum := sha256.Sum256(b)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	resp := d.do(t, "POST", "/v2/"+repo+"/blobs/uploads/", nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusAccepted || loc == "" {
		t.Fatalf("starting an upload to %s: %d", repo, resp.StatusCode)
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	req, err := http.NewRequest("PUT", loc+sep+"digest="+digest, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err = d.client.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("completing the upload to %s: %v %v", repo, resp, err)
	}
	resp.Body.Close()
	return digest
}

// do sends a request straight to the registry.
func (d *distribution) do(t *testing.T, method, path string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, "https://"+d.addr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
