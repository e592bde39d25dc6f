package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The node's clients: skopeo and ctr as real users run them, and small Go
// clients (dialled from inside the node's namespace) where a test needs to
// look at the TLS session itself.

// imageRef is the test image under host.
func imageRef(host string) string { return host + "/" + imageRepo + ":" + imageTag }

// skopeo returns `skopeo --insecure-policy args...` run in ns (the policy
// file is the host's business; signatures are not what is tested here).
func skopeo(ns *netns, args ...string) *exec.Cmd {
	return ns.command(append([]string{"skopeo", "--insecure-policy"}, args...)...)
}

// pullSkopeo copies docker://host/e2e/app:1 from the node into a fresh oci:
// directory, trusting the CAs in certDir, with env added (proxy settings),
// and returns the digest of the manifest it wrote.
func (w *world) pullSkopeo(t *testing.T, host, certDir string, env ...string) (string, result) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "pulled")
	r := runCmd(skopeo(w.node, "copy", "--src-cert-dir", certDir,
		"docker://"+imageRef(host), "oci:"+dest+":"+imageTag), env...)
	if r.err != nil {
		return "", r
	}
	d, err := ociIndexDigest(dest, imageTag)
	if err != nil {
		r.err = err
	}
	return d, r
}

// mustPullSkopeo is pullSkopeo that fails t unless the pulled digest is
// the pushed one.
func (w *world) mustPullSkopeo(t *testing.T, host, certDir string, env ...string) {
	t.Helper()
	got, r := w.pullSkopeo(t, host, certDir, env...)
	if r.err != nil {
		t.Fatalf("pull failed:\n%s", r)
	}
	if want := w.image.digest.String(); got != want {
		t.Fatalf("pulled digest %s, pushed %s\n%s", got, want, r)
	}
}

// tlsDialIn completes a TLS handshake with addr from inside ns.
func tlsDialIn(ns *netns, addr string, cfg *tls.Config) (*tls.Conn, error) {
	var conn *tls.Conn
	err := ns.do(func() error {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
		conn = c
		return err
	})
	return conn, err
}

// gatewayTLS is what a node that trusts the gateway's CA offers.
func (w *world) gatewayTLS(t *testing.T, serverName string) *tls.Config {
	t.Helper()
	pool, err := certPool(filepath.Join(w.gatewayCerts, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{ServerName: serverName, RootCAs: pool, NextProtos: []string{"http/1.1"}}
}

// bridgeGet sends GET path to the registry through the gateway's bridge
// route, from the node, on a new connection.
func (w *world) bridgeGet(t *testing.T, path string) (int, error) {
	t.Helper()
	conn, err := tlsDialIn(w.node, bastionAddr+":443", w.gatewayTLS(t, registryHost))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	status, _, err := roundTrip(conn, "https://"+registryHost+path)
	return status, err
}

// httpGetIn sends GET path to addr over a connection opened inside ns
// (net/http would dial from another thread, outside the namespace).
func httpGetIn(ns *netns, addr, path string) (int, []byte, error) {
	var conn net.Conn
	err := ns.do(func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	return roundTrip(conn, "http://"+addr+path)
}

// roundTrip sends one HTTP/1.1 GET on conn and reads the whole response.
func roundTrip(conn net.Conn, url string) (int, []byte, error) {
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return 0, nil, fmt.Errorf("write request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, nil, fmt.Errorf("read response: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
