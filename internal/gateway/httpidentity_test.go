package gateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/testkit"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
)

// startSerialRegistry is an HTTPS upstream (h2 and http/1.1) that
// demands a client certificate of w's CA and answers every request with
// the serial of the certificate its connection was made with.
func startSerialRegistry(t *testing.T, w *world) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{
		ErrorLog: log.New(io.Discard, "", 0),
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			fmt.Fprint(rw, r.TLS.PeerCertificates[0].SerialNumber.Text(16))
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{w.leaf("registry.test")}, ClientAuth: tls.RequireAndVerifyClientCert,
			ClientCAs: w.ca.Pool(), NextProtos: []string{"h2", "http/1.1"}},
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.ServeTLS(ln, "", "") })
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	return ln.Addr().String()
}

// TestHTTPRouteRotatedEdgeCertificateReachesTheRegistry: an http route
// keeps a pool of upstream connections (HTTP/2: one connection carries
// every request), so a rotated upstream_tls.cert must also retire the
// pooled connections made with the old one, or the registry would go on
// seeing the old identity for as long as traffic keeps the connection
// busy. The first request after "certificate reloaded" shows the new
// serial, over either upstream protocol (HTTP/1.1 pool and HTTP/2).
func TestHTTPRouteRotatedEdgeCertificateReachesTheRegistry(t *testing.T) {
	for _, protocol := range []string{config.UpstreamHTTP1, config.UpstreamH2} {
		t.Run(protocol, func(t *testing.T) { rotatedEdgeCertificateReachesTheRegistry(t, protocol) })
	}
}

func rotatedEdgeCertificateReachesTheRegistry(t *testing.T, protocol string) {
	w := newWorld(t, "")
	up := startSerialRegistry(t, w)
	_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
	must(t, err)
	newSecretDir(t, filepath.Join(w.dir, "trust"), map[string][]byte{"ca.crt": w.ca.PEM}, "ca.crt")
	edge := newSecretDir(t, filepath.Join(w.dir, "edge"), w.clientPair(t, "edge-1"), "tls.crt", "tls.key")
	w.writeConfig(fmt.Sprintf(identityConfig, up) + "    http: {upstream_protocol: " + protocol + "}\n")
	w.start()

	node := &http.Client{Transport: &http.Transport{DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return w.dialTLS("registry.test", "http/1.1")
	}}}
	defer node.CloseIdleConnections()
	get := func() string {
		t.Helper()
		resp, err := node.Get("https://registry.test/v2/")
		must(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		must(t, err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET through the http route: %d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	first := get()
	if again := get(); again != first {
		t.Fatalf("serial changed from %s to %s without a rotation", first, again)
	}
	edge.swap(w.clientPair(t, "edge-2"))
	testkit.Poll(t, `"certificate reloaded" for the client certificate`, func() bool {
		get() // requests during the swap succeed, under either identity
		return w.logs.Contains(`msg="certificate reloaded" route=registry role=client`)
	})
	rotated := get()
	if rotated == first {
		t.Fatalf("the first request after the reload reached the registry with the old certificate (serial %s)", rotated)
	}
	for i := range 3 {
		if s := get(); s != rotated {
			t.Fatalf("request %d after the reload showed serial %s, want %s", i+2, s, rotated)
		}
	}
}
