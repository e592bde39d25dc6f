package demo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/miekg/dns"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/gateway"
	"github.com/snigate/snigate/internal/memregistry"
	"github.com/snigate/snigate/internal/pki"
)

// world is everything the tour starts; close stops it all.
type world struct {
	t       *tour
	dir     string
	command string // how the --keep hints run snigate

	registryCA, edgeCA *pki.Authority
	registryCert       tls.Certificate
	edgeCert           tls.Certificate
	gatewayCA          *x509.CertPool

	registry *memregistry.Registry
	imageRef name.Reference
	digest   v1.Hash

	log       *logTap      // the gateway's log
	nodeDials atomic.Int64 // connections the node opened to the gateway
	addrs     gateway.Addrs
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	runErr    error
}

func newWorld(ctx context.Context, opts Options, out io.Writer) (*world, error) {
	dir, err := os.MkdirTemp("", "snigate-demo-")
	if err != nil {
		return nil, err
	}
	w := &world{t: &tour{out: out, start: time.Now()}, dir: dir, log: newLogTap(), command: opts.Command}
	if w.command == "" {
		w.command = selfCommand(os.Args[0])
	}
	fmt.Fprintf(out, "snigate demo: a node pulls %s through the gateway, which holds the only certificate the registry accepts\n\n", RegistryName)
	steps := []struct {
		what string
		f    func() (string, error)
	}{
		{"create throwaway PKI", w.makePKI},
		{"start an mTLS-only registry", w.startRegistry},
		{"push an image to it (with the edge cert)", func() (string, error) { return w.push(ctx) }},
		{"start snigate (bridge mode + DNS responder)", func() (string, error) { return w.startGateway(ctx, opts.Logger) }},
		{"resolve " + RegistryName + " via snigate DNS", func() (string, error) { return w.resolve(ctx) }},
		{"pull through snigate (no proxy, no client cert)", func() (string, error) { return w.pullThroughGateway(ctx) }},
		{"pull directly without the edge cert", func() (string, error) { return w.pullDirect(ctx) }},
	}
	for _, s := range steps {
		mark := w.log.mark()
		err := w.t.step(s.what, s.f)
		w.t.gatewayLines(w.log.connLines(mark))
		if err != nil {
			return w, fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return w, nil
}

func (w *world) close() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
	if w.registry != nil {
		w.registry.Close()
	}
	os.RemoveAll(w.dir)
}

func (w *world) path(name string) string { return filepath.Join(w.dir, name) }

func (w *world) makePKI() (string, error) {
	var err error
	if w.registryCA, err = pki.NewAuthority("demo registry CA"); err != nil {
		return "", err
	}
	if w.edgeCA, err = pki.NewAuthority("demo edge client CA"); err != nil {
		return "", err
	}
	var edgeCert, edgeKey []byte
	if w.registryCert, _, _, err = w.registryCA.Leaf(RegistryName, RegistryName); err != nil {
		return "", err
	}
	if w.edgeCert, edgeCert, edgeKey, err = w.edgeCA.Leaf("bastion.example.test"); err != nil {
		return "", err
	}
	err = pki.WriteFiles(w.dir, map[string][]byte{
		"edge.crt": edgeCert, "edge.key": edgeKey, "registry-ca.crt": w.registryCA.PEM,
	})
	if err != nil {
		return "", err
	}
	gw := w.path("gateway-ca")
	if err := certs.InitCA(certs.InitCAConfig{Dir: gw, Names: []string{RegistryName}}); err != nil {
		return "", err
	}
	pemCA, err := os.ReadFile(filepath.Join(gw, "ca.crt"))
	if err != nil {
		return "", err
	}
	w.gatewayCA = x509.NewCertPool()
	w.gatewayCA.AppendCertsFromPEM(pemCA)
	return "registry CA, edge client cert, gateway CA limited to " + RegistryName + " in " + w.dir, nil
}

func (w *world) startRegistry() (string, error) {
	r, err := memregistry.StartRegistry(w.registryCert, w.edgeCA.Pool())
	if err != nil {
		return "", err
	}
	w.registry = r
	return r.Addr + ", requires a client certificate from the edge CA", nil
}

// directTransport talks to the registry itself, as the bastion can.
func (w *world) directTransport(withEdgeCert bool) *http.Transport {
	c := &tls.Config{RootCAs: w.registryCA.Pool(), MinVersion: tls.VersionTLS12}
	if withEdgeCert {
		c.Certificates = []tls.Certificate{w.edgeCert}
	}
	return memregistry.NewTransport(c, func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", w.registry.Addr)
	})
}

func (w *world) push(ctx context.Context) (string, error) {
	ref, err := name.ParseReference(RegistryName + "/demo/hello:1.0")
	if err != nil {
		return "", err
	}
	w.imageRef = ref
	t := w.directTransport(true)
	defer t.CloseIdleConnections()
	if w.digest, err = memregistry.PushImage(ctx, ref, t); err != nil {
		return "", err
	}
	return ref.String() + " " + w.digest.String(), nil
}

func (w *world) writeConfig() (string, error) {
	cfg := fmt.Sprintf(`listen:
  tls: ["127.0.0.1:0"]
  dns: "127.0.0.1:0"
  admin: "127.0.0.1:0"
dns:
  answer: ["127.0.0.1"]
  ttl: 30s
routes:
  - name: registry
    sni: [%q]
    mode: bridge
    upstreams: [%q]
    health:
      check: http
      path: /v2/
      expect_status: [200, 401]
    serve:
      ca_cert: gateway-ca/ca.crt
      ca_key: gateway-ca/ca.key
    upstream_tls:
      cert: edge.crt
      key: edge.key
      ca: registry-ca.crt
`, RegistryName, w.registry.Addr)
	p := w.path("snigate.yaml")
	return p, os.WriteFile(p, []byte(cfg), 0o644)
}

func (w *world) startGateway(ctx context.Context, logger *slog.Logger) (string, error) {
	file, err := w.writeConfig()
	if err != nil {
		return "", err
	}
	ready := make(chan gateway.Addrs, 1)
	g, err := gateway.New(gateway.Options{ConfigFile: file, Logger: w.log.logger(logger),
		ReadyFunc: func(a gateway.Addrs) { ready <- a }})
	if err != nil {
		return "", err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	done := make(chan struct{})
	w.wg.Go(func() { defer close(done); w.runErr = g.Run(ctx) })
	select {
	case w.addrs = <-ready:
	case <-done:
		return "", fmt.Errorf("gateway stopped: %v", w.runErr)
	}
	return fmt.Sprintf("tls %s, dns %s, admin %s", w.addrs.TLS[0], w.addrs.DNS, w.addrs.Admin), nil
}

// lookup asks the gateway's DNS responder for the A record of host.
func (w *world) lookup(ctx context.Context, host string) (string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeA)
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.ExchangeContext(ctx, m, w.addrs.DNS.String())
	if err != nil {
		return "", err
	}
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String(), nil
		}
	}
	return "", fmt.Errorf("no A record for %s (rcode %s)", host, dns.RcodeToString[r.Rcode])
}

func (w *world) resolve(ctx context.Context) (string, error) {
	ip, err := w.lookup(ctx, RegistryName)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("A %s (the gateway), answered authoritatively by snigate", ip), nil
}

// nodeTransport is a node's view: it trusts only the gateway CA, has no
// client certificate and no proxy, and finds the registry through DNS. The
// gateway's port stands in for :443.
func (w *world) nodeTransport() *http.Transport {
	_, port, _ := net.SplitHostPort(w.addrs.TLS[0].String())
	c := &tls.Config{RootCAs: w.gatewayCA, MinVersion: tls.VersionTLS12}
	return memregistry.NewTransport(c, func(ctx context.Context, hostport string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(hostport)
		ip, err := w.lookup(ctx, host)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		w.nodeDials.Add(1)
		return d.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
	})
}

// pullThroughGateway pulls as a node does and verifies the digest. It
// returns once the gateway has logged the pull's connections, so that the
// tour shows their lines.
func (w *world) pullThroughGateway(ctx context.Context) (string, error) {
	mark, dials := w.log.mark(), w.nodeDials.Load()
	t := w.nodeTransport()
	got, err := memregistry.PullImage(ctx, w.imageRef, t)
	t.CloseIdleConnections()
	wctx, cancel := context.WithTimeout(ctx, connLogWait)
	defer cancel()
	w.log.waitConnLines(wctx, mark, int(w.nodeDials.Load()-dials))
	if err != nil {
		return "", err
	}
	if got != w.digest {
		return "", fmt.Errorf("pulled digest %s, pushed %s", got, w.digest)
	}
	return "digest " + got.String() + " (the pushed one)", nil
}

// connLogWait bounds the wait for the connection lines of a pull.
const connLogWait = 5 * time.Second

func (w *world) pullDirect(ctx context.Context) (string, error) {
	t := w.directTransport(false)
	defer t.CloseIdleConnections()
	_, err := memregistry.PullImage(ctx, w.imageRef, t)
	if err == nil {
		return "", errors.New("the registry accepted a client without the edge certificate")
	}
	return "refused by the registry, as it should be (" + shortErr(err) + ")", nil
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

func (w *world) printTryIt(out io.Writer) {
	_, port, _ := net.SplitHostPort(w.addrs.TLS[0].String())
	_, dport, _ := net.SplitHostPort(w.addrs.DNS.String())
	fmt.Fprintf(out, `
snigate stays up (--keep). Try it by hand, then press Ctrl-C:

  # DNS: the routed name is answered with the gateway's address; other types get no answer
  dig @127.0.0.1 -p %[2]s %[3]s A +norecurse
  dig @127.0.0.1 -p %[2]s %[3]s HTTPS

  # the registry API through the gateway, trusting only the gateway CA
  curl --cacert %[4]s --resolve %[3]s:%[1]s:127.0.0.1 https://%[3]s:%[1]s/v2/_catalog

  # skopeo, once /etc/hosts maps %[3]s to 127.0.0.1: its Digest is the one above
  mkdir -p /tmp/snigate-certs && cp %[4]s /tmp/snigate-certs/ca.crt
  skopeo inspect --cert-dir /tmp/snigate-certs docker://%[3]s:%[1]s/demo/hello:1.0

  # runtime API
  %[7]s ctl --admin %[5]s upstreams
  curl -s http://%[5]s/metrics | grep ^snigate_

  configuration: %[6]s

The gateway's connection lines (and any warning) follow as they happen:
`, port, dport, RegistryName, filepath.Join(w.dir, "gateway-ca", "ca.crt"), w.addrs.Admin, w.path("snigate.yaml"), w.command)
}
