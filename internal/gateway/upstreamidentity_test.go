package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit"
)

// handshake is what an identityServer saw of one connection's handshake.
type handshake struct {
	serial  string // of the client certificate shown, resumed or not
	resumed bool
}

// identityServer is an upstream that demands a client certificate from
// clientCAs and reports, for every handshake, the serial of the client
// certificate it was shown (the one a resumed session carries, too). It
// then echoes bytes, so that a client through the gateway knows its
// connection reached it.
type identityServer struct {
	ln   net.Listener
	seen chan handshake
	wg   sync.WaitGroup
}

func startIdentityServer(t *testing.T, cert tls.Certificate, clientCAs *x509.CertPool) *identityServer {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
	})
	must(t, err)
	s := &identityServer{ln: ln, seen: make(chan handshake, 256)}
	s.wg.Go(s.acceptLoop)
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *identityServer) acceptLoop() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.serve(c.(*tls.Conn)) })
	}
}

func (s *identityServer) serve(c *tls.Conn) {
	defer c.Close()
	if c.Handshake() != nil {
		return
	}
	cs := c.ConnectionState()
	s.seen <- handshake{serial: cs.PeerCertificates[0].SerialNumber.Text(16), resumed: cs.DidResume}
	_, _ = io.Copy(c, c)
}

// next is the handshake of the connection the test just completed
// through the gateway (the route's health check is tcp, so every
// handshake the server sees is traffic's).
func (s *identityServer) next(t *testing.T) handshake {
	t.Helper()
	select {
	case h := <-s.seen:
		return h
	default:
		t.Fatal("the upstream saw no handshake for a connection that reached it")
		return handshake{}
	}
}

const identityConfig = `listen:
  tls: ["127.0.0.1:0"]
  admin: "127.0.0.1:0"
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%q]
    health: {check: tcp}
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: edge/tls.crt, key: edge/tls.key, ca: trust/ca.crt}
`

// TestRotatedEdgeCertificateReachesTheRegistryAtOnce is the regression
// test of a rotation that kept the old identity: after upstream_tls.cert
// changed (a Secret ..data swap) and snigate logged "certificate
// reloaded", upstream connections went on resuming TLS sessions created
// with the old certificate, so the registry saw the old identity for as
// long as the tickets lived. Now the very first connection after the
// reload, and every later one, shows the new certificate's serial, and
// none fails.
func TestRotatedEdgeCertificateReachesTheRegistryAtOnce(t *testing.T) {
	w := newWorld(t, "")
	up := startIdentityServer(t, w.leaf("registry.test"), w.ca.Pool())
	_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
	must(t, err)
	newSecretDir(t, filepath.Join(w.dir, "trust"), map[string][]byte{"ca.crt": w.ca.PEM}, "ca.crt")
	edge := newSecretDir(t, filepath.Join(w.dir, "edge"), w.clientPair(t, "edge-1"), "tls.crt", "tls.key")
	w.writeConfig(fmt.Sprintf(identityConfig, up.addr()))
	w.start()

	first := w.bridgeOnce(t, up)
	if again := w.bridgeOnce(t, up); !again.resumed || again.serial != first.serial {
		t.Fatalf("second connection %+v, want a resumption of %+v (the test needs resumption to mean anything)", again, first)
	}

	edge.swap(w.clientPair(t, "edge-2"))
	testkit.Poll(t, `"certificate reloaded" for the client certificate`, func() bool {
		w.bridgeOnce(t, up) // connections during the swap succeed, under either identity
		return w.logs.Contains(`msg="certificate reloaded" route=registry role=client`)
	})
	rotated := w.bridgeOnce(t, up)
	if rotated.serial == first.serial {
		t.Fatalf("first connection after the reload showed the old certificate (serial %s, resumed %v)", rotated.serial, rotated.resumed)
	}
	for i := range 3 {
		if h := w.bridgeOnce(t, up); h.serial != rotated.serial {
			t.Fatalf("connection %d after the reload showed serial %s, want %s", i+2, h.serial, rotated.serial)
		}
	}
}

// TestRotatedUpstreamCAAppliesToResumedSessions: a resumed session skipped
// verification against a changed upstream_tls.ca, so an upstream the new
// bundle no longer trusts was still reached. Now a session is resumed only
// under the bundle it was verified with: after the bundle changes, the
// next connection is verified against it.
func TestRotatedUpstreamCAAppliesToResumedSessions(t *testing.T) {
	w := newWorld(t, "")
	up := startIdentityServer(t, w.leaf("registry.test"), w.ca.Pool())
	_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
	must(t, err)
	trust := newSecretDir(t, filepath.Join(w.dir, "trust"), map[string][]byte{"ca.crt": w.ca.PEM}, "ca.crt")
	newSecretDir(t, filepath.Join(w.dir, "edge"), w.clientPair(t, "edge-1"), "tls.crt", "tls.key")
	w.writeConfig(fmt.Sprintf(identityConfig, up.addr()))
	w.start()

	w.bridgeOnce(t, up)
	if h := w.bridgeOnce(t, up); !h.resumed {
		t.Fatal("second connection was not resumed (the test needs resumption to mean anything)")
	}
	other, err := pki.NewAuthority("another CA")
	must(t, err)
	trust.swap(map[string][]byte{"ca.crt": other.PEM})
	w.logs.Wait(t, `msg="CA bundle reloaded" route=registry role=upstream_ca`)
	if c, err := w.dialTLS("registry.test"); err == nil {
		_, err = io.WriteString(c, "x")
		if err == nil {
			_, err = io.ReadFull(c, make([]byte, 1))
		}
		c.Close()
		if err == nil {
			t.Fatal("reached an upstream that the rotated bundle does not trust (a resumed session skipped verification)")
		}
	}
	select {
	case h := <-up.seen:
		t.Fatalf("the upstream saw a handshake %+v under a bundle that does not trust it", h)
	default:
	}
}

// bridgeOnce opens one connection through the gateway, checks that it
// reaches the upstream, and returns what the upstream saw of it.
func (w *world) bridgeOnce(t *testing.T, up *identityServer) handshake {
	t.Helper()
	c, err := w.dialTLS("registry.test")
	must(t, err)
	defer c.Close()
	echoRoundTrip(t, c, "ping")
	return up.next(t)
}

// clientPair is a fresh client certificate for cn from the world's CA, as
// tls.crt and tls.key.
func (w *world) clientPair(t *testing.T, cn string) map[string][]byte {
	_, c, k, err := w.ca.Leaf(cn)
	must(t, err)
	return map[string][]byte{"tls.crt": c, "tls.key": k}
}

func (s *identityServer) addr() string { return s.ln.Addr().String() }
