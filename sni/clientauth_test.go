package sni

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
)

// nodePKI is a node CA (the cluster CA that signs kubelet client
// certificates) in a reloadable bundle, a CRL, and another CA.
type nodePKI struct {
	*bridgePKI
	nodeCA, otherCA *testCA
	cas             *swapPool
	crl             *fakeCRL
}

func newNodePKI(tb testing.TB) *nodePKI {
	p := &nodePKI{bridgePKI: newBridgePKI(tb), nodeCA: newPKI(tb, "cluster CA"), otherCA: newPKI(tb, "other CA"), crl: &fakeCRL{}}
	p.cas = &swapPool{}
	p.cas.p.Store(p.nodeCA.pool)
	return p
}

// swapPool is a CA bundle a test can replace (certs.CABundle's reload).
type swapPool struct{ p atomic.Pointer[x509.CertPool] }

func (s *swapPool) Pool() *x509.CertPool { return s.p.Load() }

// fakeCRL revokes the serial numbers added to it (certs.CRL's reload).
type fakeCRL struct {
	mu      sync.Mutex
	revoked map[string]bool
}

func (f *fakeCRL) revoke(c *x509.Certificate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revoked == nil {
		f.revoked = map[string]bool{}
	}
	f.revoked[c.SerialNumber.String()] = true
}

func (f *fakeCRL) Revoked(cert, issuer *x509.Certificate) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.revoked[cert.SerialNumber.String()]
}

// kubelet issues a kubelet-style client certificate from ca:
// CN=system:node:NAME, O=system:nodes, clientAuth; opts override.
func kubelet(tb testing.TB, ca *testCA, name string, opts ...pki.Option) *pki.Issued {
	tb.Helper()
	base := []pki.Option{pki.CommonName("system:node:" + name), pki.Organization("system:nodes"),
		pki.ExtKeyUsage(x509.ExtKeyUsageClientAuth)}
	l, err := ca.Issue(append(base, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// route is a bridge route that requires node certificates of the node CA
// named like names.
func (p *nodePKI) route(tb testing.TB, addr string, names ...string) *Route {
	r := p.bridgePKI.route(tb, addr)
	r.ClientAuth = &ClientAuth{CAs: p.cas, CRL: p.crl, Names: names}
	return r
}

// node is a node's client configuration presenting cert (nil: none),
// sent whatever CA the gateway might name.
func (p *nodePKI) node(cert *pki.Issued, version uint16) *tls.Config {
	cfg := p.nodeConfig("h2")
	cfg.MinVersion, cfg.MaxVersion = version, version
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert.Pair, nil }
	}
	return cfg
}

// nodePing runs one echo exchange and returns the first error the node
// sees: TLS 1.3 reports a refused client certificate only on the first
// read after the node's handshake.
func nodePing(tb testing.TB, w *world, cfg *tls.Config) (tls.ConnectionState, error) {
	tb.Helper()
	tc := tls.Client(w.dial(tb), cfg)
	defer tc.Close()
	if err := tc.Handshake(); err != nil {
		return tls.ConnectionState{}, err
	}
	tc.Write([]byte("ping"))
	tc.CloseWrite()
	got, err := io.ReadAll(tc)
	if err == nil && string(got) != "ping" {
		err = errors.New("echo through the bridge: got " + string(got))
	}
	return tc.ConnectionState(), err
}

func TestClientAuthRefusals(t *testing.T) {
	p := newNodePKI(t)
	past := time.Now().Add(-48 * time.Hour)
	revoked := kubelet(t, p.nodeCA, "revoked-1")
	p.crl.revoke(revoked.Cert)
	tests := []struct {
		name   string
		cert   *pki.Issued
		names  []string
		reason string // "": accepted
		node   string
	}{
		{name: "kubelet certificate", cert: kubelet(t, p.nodeCA, "worker-1"), names: []string{"system:node:*"}, node: "system:node:worker-1"},
		{name: "any name when client_names is empty", cert: kubelet(t, p.nodeCA, "worker-2"), node: "system:node:worker-2"},
		{name: "URI SAN identity", cert: kubelet(t, p.nodeCA, "", pki.CommonName(""), pki.URIs("spiffe://cluster.local/ns/kube-system/sa/node")),
			names: []string{"spiffe://cluster.local/ns/*/sa/node"}, node: "spiffe://cluster.local/ns/kube-system/sa/node"},
		{name: "DNS SAN allowed", cert: kubelet(t, p.nodeCA, "w3", pki.SANs("w3.nodes.example.com")), names: []string{"*.nodes.example.com"}, node: "system:node:w3"},
		{name: "no certificate", reason: reasonNoCertificate},
		{name: "another CA", cert: kubelet(t, p.otherCA, "worker-1"), reason: reasonUnknownCA},
		{name: "expired", cert: kubelet(t, p.nodeCA, "old", pki.Validity(past.Add(-time.Hour), past)), reason: reasonExpired},
		{name: "no clientAuth usage", cert: kubelet(t, p.nodeCA, "srv", pki.ExtKeyUsage(x509.ExtKeyUsageServerAuth)), reason: reasonWrongUsage},
		{name: "revoked", cert: revoked, reason: reasonRevoked},
		{name: "name outside client_names", cert: kubelet(t, p.nodeCA, "x", pki.CommonName("system:kube-proxy")), names: []string{"system:node:*"}, reason: reasonNameNotAllowed},
	}
	for _, version := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		for _, tt := range tests {
			t.Run(tls.VersionName(version)+"/"+tt.name, func(t *testing.T) {
				up := newTLSUpstream(t, p.upstreamConfig("h2"))
				w := newWorld(t, Config{}, "", p.route(t, up.addr, tt.names...))
				w.m.InitClientAuth("registry")
				_, err := nodePing(t, w, p.node(tt.cert, version))
				if tt.reason == "" {
					if err != nil {
						t.Fatalf("node refused: %v", err)
					}
					line := w.logs.wait(t, "msg=connection", "node="+tt.node+" ", "route=registry", "result=ok")
					if c, n, sn := strings.Index(line, " client="), strings.Index(line, " node="), strings.Index(line, " sni="); !(c < n && n < sn) {
						t.Errorf("connection line %q: want node right after client, before sni", line)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), "bad certificate") {
					t.Errorf("node error %v; want alert bad_certificate", err)
				}
				w.logs.wait(t, "client certificate refused", "reason="+tt.reason, "route=registry")
				w.logs.wait(t, "msg=connection", `node=""`, "result=client_cert_refused")
				for _, r := range clientAuthReasons {
					want := 0.0
					if r == tt.reason {
						want = 1
					}
					if got := w.counter(t, w.m.clientAuth, "registry", r); got != want {
						t.Errorf("snigate_client_auth_failures_total{reason=%q} = %v, want %v", r, got, want)
					}
				}
			})
		}
	}
}

// TestClientAuthResumedSessionRechecked: a session resumed after its
// certificate was revoked, or after its CA left client_ca, is refused.
// Without VerifyConnection (crypto/tls verifies client certificates only
// in full handshakes) the resumed session would get through.
func TestClientAuthResumedSessionRechecked(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *nodePKI, cert *pki.Issued)
		reason string
	}{
		{"revoked by the CRL", func(p *nodePKI, c *pki.Issued) { p.crl.revoke(c.Cert) }, reasonRevoked},
		{"CA removed from client_ca", func(p *nodePKI, _ *pki.Issued) { p.cas.p.Store(p.otherCA.pool) }, reasonUnknownCA},
	}
	for _, version := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		for _, tt := range tests {
			t.Run(tls.VersionName(version)+"/"+tt.name, func(t *testing.T) {
				p := newNodePKI(t)
				up := newTLSUpstream(t, p.upstreamConfig("h2"))
				w := newWorld(t, Config{}, "", p.route(t, up.addr, "system:node:*"))
				cert := kubelet(t, p.nodeCA, "worker-1")
				node := p.node(cert, version)
				node.ClientSessionCache = tls.NewLRUClientSessionCache(4)
				for i, want := range []bool{false, true} {
					st, err := nodePing(t, w, node)
					if err != nil {
						t.Fatalf("connection %d: %v", i+1, err)
					}
					if st.DidResume != want {
						t.Fatalf("connection %d: DidResume %v, want %v", i+1, st.DidResume, want)
					}
				}
				tt.change(p, cert)
				if _, err := nodePing(t, w, node); err == nil || !strings.Contains(err.Error(), "bad certificate") {
					t.Errorf("after the change: %v; want alert bad_certificate", err)
				}
				w.logs.wait(t, "client certificate refused", "reason="+tt.reason, "resumed=true")
			})
		}
	}
}

func TestNodeIdentity(t *testing.T) {
	ca := newPKI(t, "cluster CA")
	tests := []struct {
		name string
		opts []pki.Option
		want string
	}{
		{"common name", []pki.Option{pki.CommonName("system:node:w1"), pki.URIs("spiffe://x/y")}, "system:node:w1"},
		{"first URI SAN without a CN", []pki.Option{pki.CommonName(""), pki.URIs("spiffe://x/a", "spiffe://x/b")}, "spiffe://x/a"},
		{"neither", []pki.Option{pki.CommonName(""), pki.SANs("w1.example.com")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ca.Issue(tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := NodeIdentity(l.Cert); got != tt.want {
				t.Errorf("NodeIdentity = %q, want %q", got, tt.want)
			}
		})
	}
}
