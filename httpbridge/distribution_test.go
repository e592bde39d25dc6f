package httpbridge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	testdistribution "github.com/snigate/snigate/internal/testkit/distribution"
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
	_, certPEM, keyPEM, err := p.ca.Leaf("registry", registryName, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	reg := testdistribution.Start(t, testdistribution.Options{
		TLS:    testdistribution.TLSFiles{Cert: certPEM, Key: keyPEM, ClientCAs: p.ca.PEM},
		Secret: "httpbridge-test",
	})
	d := &distribution{addr: reg.Addr, client: &http.Client{Transport: &http.Transport{TLSClientConfig: p.edgeTLS()}}}
	t.Cleanup(d.client.CloseIdleConnections)
	return d
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
