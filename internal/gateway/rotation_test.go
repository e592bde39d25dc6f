package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/snigate/snigate/internal/memregistry"
	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit"
)

// k8sSecretDir lays out files the way a Kubernetes Secret volume does:
// name -> ..data/name, ..data -> a timestamped directory, swapped
// atomically by renaming a new symlink over ..data.
type k8sSecretDir struct {
	t   *testing.T
	dir string
	n   int
}

func newSecretDir(t *testing.T, dir string, files map[string][]byte, names ...string) *k8sSecretDir {
	s := &k8sSecretDir{t: t, dir: dir}
	must(t, os.MkdirAll(dir, 0o755))
	s.swap(files)
	for _, n := range names {
		must(t, os.Symlink(filepath.Join("..data", n), filepath.Join(dir, n)))
	}
	return s
}

// swap writes files into a new timestamped directory and points ..data at
// it in one rename.
func (s *k8sSecretDir) swap(files map[string][]byte) {
	s.n++
	ts := fmt.Sprintf("..2026_11_29_%02d", s.n)
	must(s.t, os.Mkdir(filepath.Join(s.dir, ts), 0o755))
	must(s.t, pki.WriteFiles(filepath.Join(s.dir, ts), files))
	tmp := filepath.Join(s.dir, "..data_tmp")
	must(s.t, os.Symlink(ts, tmp))
	must(s.t, os.Rename(tmp, filepath.Join(s.dir, "..data")))
}

// sharedRegistry serves one in-memory registry on two mTLS listeners: two
// upstream instances on the same storage.
func sharedRegistry(t *testing.T, cert tls.Certificate, ca *pki.Authority) (addrs []string) {
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0), TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert,
			ClientCAs: ca.Pool(), NextProtos: []string{"h2", "http/1.1"},
		}}
		var wg sync.WaitGroup
		wg.Go(func() { srv.ServeTLS(ln, "", "") })
		t.Cleanup(func() { srv.Close(); wg.Wait() })
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

const rotationConfig = `listen:
  tls: ["127.0.0.1:0"]
  admin: "127.0.0.1:0"
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%s]
    serve: {cert: serve/tls.crt, key: serve/tls.key}
    upstream_tls: {cert: edge/tls.crt, key: edge/tls.key, ca: ca.crt}
%s`

// TestReloadAndRotationUnderLoad: while image pulls run through the
// bridge, the configuration is rewritten (a route added, one removed, the
// upstream list changed) and both certificates are rotated by a Kubernetes
// Secret symlink swap; every pull completes with the right digest, and
// new connections see the new certificate.
func TestReloadAndRotationUnderLoad(t *testing.T) {
	w := newWorld(t, "")
	ups := sharedRegistry(t, w.leaf("registry.test"), w.ca)
	serve := newSecretDir(t, filepath.Join(w.dir, "serve"), w.leafPEM("registry.test", "registry.test"), "tls.crt", "tls.key")
	edge := newSecretDir(t, filepath.Join(w.dir, "edge"), w.leafPEM("edge.test"), "tls.crt", "tls.key")
	echo := startEcho(t, w.leaf("echo.test"), nil)
	extra := spliceRoute("echo", "echo.test", echo.addr())
	w.writeConfig(fmt.Sprintf(rotationConfig, fmt.Sprintf("%q", ups[0]), extra))
	w.start()
	ref, digest := w.pushRotationImage(ups[0])

	const pulls = 12
	results := make(chan error, pulls)
	step := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { pullSeries(t.Context(), w, ref, digest, pulls, step, results) })

	<-step // a pull done under the first configuration
	w.reloadWith(fmt.Sprintf(rotationConfig, fmt.Sprintf("%q, %q", ups[0], ups[1]), ""))
	<-step
	w.rotateCertificates(serve, edge)
	<-step
	w.reloadWith(fmt.Sprintf(rotationConfig, fmt.Sprintf("%q", ups[1]), extra))
	go func() {
		for range step {
		}
	}()
	wg.Wait()
	close(results)
	wantPullsSucceeded(t, results, pulls)
}

// leafPEM is a new leaf of the world's CA as a Secret's tls.crt and
// tls.key.
func (w *world) leafPEM(cn string, names ...string) map[string][]byte {
	_, c, k, err := w.ca.Leaf(cn, names...)
	must(w.t, err)
	return map[string][]byte{"tls.crt": c, "tls.key": k}
}

// pushRotationImage pushes an image straight to the registry at up and
// returns its reference and digest.
func (w *world) pushRotationImage(up string) (name.Reference, v1.Hash) {
	ref, err := name.ParseReference("registry.test/rot/app:1")
	must(w.t, err)
	direct := w.transport(up, true)
	digest, err := memregistry.PushImage(w.t.Context(), ref, direct)
	must(w.t, err)
	direct.CloseIdleConnections()
	return ref, digest
}

// reloadWith writes config and reloads the gateway, waiting for the
// reload to be done.
func (w *world) reloadWith(config string) {
	w.writeConfig(config)
	must(w.t, w.g.Reload(w.t.Context(), "test"))
	<-w.reloaded
}

// rotateCertificates swaps both Secrets to new leaves and waits for the
// gateway to serve and present them.
func (w *world) rotateCertificates(serve, edge *k8sSecretDir) {
	t := w.t
	oldSerial := w.servedSerial(t)
	serve.swap(w.leafPEM("registry.test", "registry.test"))
	edge.swap(w.leafPEM("edge.test"))
	testkit.Poll(t, "the rotated serving certificate", func() bool { return w.servedSerial(t).Cmp(oldSerial) != 0 })
	testkit.Poll(t, "the rotated client certificate", func() bool {
		_, m := w.adminGet("/metrics")
		return strings.Contains(m, `snigate_certificate_reloads_total{role="client",route="registry"} 1`)
	})
}

// wantPullsSucceeded reads the closed results: want of them, all nil.
func wantPullsSucceeded(t *testing.T, results <-chan error, want int) {
	t.Helper()
	n := 0
	for err := range results {
		n++
		if err != nil {
			t.Errorf("pull: %v", err)
		}
	}
	if n != want {
		t.Errorf("%d pulls finished, want %d", n, want)
	}
}

// pullSeries pulls ref n times through the gateway, one after the other,
// signalling step after each.
func pullSeries(ctx context.Context, w *world, ref name.Reference, want v1.Hash, n int, step chan<- struct{}, results chan<- error) {
	defer close(step)
	for range n {
		tr := w.transport(w.addrs.TLS[0].String(), false)
		got, err := memregistry.PullImage(ctx, ref, tr)
		tr.CloseIdleConnections()
		if err == nil && got != want {
			err = fmt.Errorf("digest %s, want %s", got, want)
		}
		results <- err
		step <- struct{}{}
	}
}

// transport reaches addr for every host, trusting the world's CA; with
// edge it presents an edge client certificate (going to the registry
// directly).
func (w *world) transport(addr string, edge bool) *http.Transport {
	c := &tls.Config{RootCAs: w.ca.Pool()}
	if edge {
		cert, _, _, err := w.ca.Leaf("edge.test")
		must(w.t, err)
		c.Certificates = []tls.Certificate{cert}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy, tr.TLSClientConfig, tr.ForceAttemptHTTP2 = nil, c, true
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	return tr
}

// servedSerial is the serial of the certificate the gateway serves for
// registry.test to a new connection.
func (w *world) servedSerial(t *testing.T) *big.Int {
	c, err := w.dialTLS("registry.test")
	if err != nil {
		var rec tls.RecordHeaderError
		if errors.As(err, &rec) {
			t.Fatalf("handshake: %v", err)
		}
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}
