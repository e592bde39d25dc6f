package sni

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/upstream"
)

const registryName = "registry.example.com"

// bridgePKI holds the three trust domains of a bridge: the registry's
// server CA, the CA the registry trusts for client certificates (and the
// edge's certificate from it), and the CA nodes trust for the gateway's
// serving certificate.
type bridgePKI struct {
	upstreamCA *testCA
	clientCA   *testCA
	serveCA    *testCA
	upCert     tls.Certificate
	edgeCert   tls.Certificate
	serveCert  tls.Certificate
}

func newBridgePKI(tb testing.TB) *bridgePKI {
	p := &bridgePKI{upstreamCA: newPKI(tb, "registry CA"), clientCA: newPKI(tb, "edge client CA"), serveCA: newPKI(tb, "gateway serving CA")}
	p.upCert = p.upstreamCA.leaf(tb, registryName)
	p.edgeCert = p.clientCA.leaf(tb)
	p.serveCert = p.serveCA.leaf(tb, registryName, "*.registry.example.com")
	return p
}

// upstreamConfig is a registry's TLS server configuration: mTLS with the
// edge's CA, and the given ALPN protocols.
func (p *bridgePKI) upstreamConfig(protos ...string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.upCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.clientCA.pool,
		NextProtos:   protos,
	}
}

// route returns a bridge route to addrs presenting the edge certificate.
func (p *bridgePKI) route(tb testing.TB, addrs ...string) *Route {
	return &Route{
		Name: "registry", SNI: []string{registryName}, Mode: ModeBridge,
		Pool:        newPool(tb, "registry", addrs...),
		Serve:       testkit.StaticCert{Cert: &p.serveCert},
		UpstreamTLS: &tls.Config{RootCAs: p.upstreamCA.pool, Certificates: []tls.Certificate{p.edgeCert}},
	}
}

// nodeConfig is a node's client configuration.
func (p *bridgePKI) nodeConfig(protos ...string) *tls.Config {
	return &tls.Config{ServerName: registryName, RootCAs: p.serveCA.pool, NextProtos: protos}
}

// tlsUpstream is a TLS server that reports each handshake's state.
type tlsUpstream struct {
	addr   string
	states chan tls.ConnectionState
}

func newTLSUpstream(tb testing.TB, cfg *tls.Config) *tlsUpstream {
	u := &tlsUpstream{states: make(chan tls.ConnectionState, 16)}
	u.addr = newTCPUpstream(tb, func(c *net.TCPConn) {
		tc := tls.Server(c, cfg)
		if err := tc.Handshake(); err != nil {
			return
		}
		select {
		case u.states <- tc.ConnectionState():
		default: // nobody is looking (benchmarks)
		}
		io.Copy(tc, tc) // echo until close_notify, then answer in kind
		tc.CloseWrite()
	}).addr
	return u
}

// ping runs one echo exchange through the gateway and returns the node's
// connection state.
func ping(tb testing.TB, w *world, cfg *tls.Config) (tls.ConnectionState, error) {
	tb.Helper()
	tc := tls.Client(w.dial(tb), cfg)
	defer tc.Close()
	if err := tc.Handshake(); err != nil {
		return tls.ConnectionState{}, err
	}
	tc.Write([]byte("ping"))
	tc.CloseWrite()
	if got, err := io.ReadAll(tc); string(got) != "ping" {
		tb.Fatalf("echo through the bridge: %q, %v", got, err)
	}
	return tc.ConnectionState(), nil
}

func TestBridgeALPN(t *testing.T) {
	p := newBridgePKI(t)
	tests := []struct {
		name     string
		upstream []string
		client   []string
		want     string
	}{
		{name: "h2 upstream, client h2 and http/1.1", upstream: []string{"h2", "http/1.1"}, client: []string{"h2", "http/1.1"}, want: "h2"},
		{name: "http/1.1-only upstream", upstream: []string{"http/1.1"}, client: []string{"h2", "http/1.1"}, want: "http/1.1"},
		{name: "upstream without ALPN", upstream: nil, client: []string{"h2", "http/1.1"}, want: ""},
		{name: "client without ALPN", upstream: []string{"h2"}, client: nil, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newTLSUpstream(t, p.upstreamConfig(tt.upstream...))
			w := newWorld(t, Config{}, "", p.route(t, up.addr))
			st, err := ping(t, w, p.nodeConfig(tt.client...))
			if err != nil {
				t.Fatal(err)
			}
			ust := <-up.states
			if st.NegotiatedProtocol != tt.want || ust.NegotiatedProtocol != tt.want {
				t.Errorf("node got %q, upstream %q; want %q on both", st.NegotiatedProtocol, ust.NegotiatedProtocol, tt.want)
			}
			if len(ust.PeerCertificates) == 0 {
				t.Error("the upstream saw no client certificate")
			}
			w.logs.wait(t, "msg=connection", "mode=bridge", "upstream="+up.addr, "result=ok", "bytes_up=4 ", "bytes_down=4 ")
		})
	}
}

func TestBridgeSessionResumption(t *testing.T) {
	p := newBridgePKI(t)
	up := newTLSUpstream(t, p.upstreamConfig("h2"))
	w := newWorld(t, Config{}, "", p.route(t, up.addr))
	node := p.nodeConfig("h2")
	node.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	for i, want := range []bool{false, true, true} {
		st, err := ping(t, w, node)
		if err != nil {
			t.Fatal(err)
		}
		if ust := <-up.states; ust.DidResume != want {
			t.Errorf("connection %d: upstream leg DidResume = %v, want %v", i+1, ust.DidResume, want)
		}
		if st.DidResume != want {
			t.Errorf("connection %d: node leg DidResume = %v, want %v", i+1, st.DidResume, want)
		}
	}
}

func TestBridgeUpstreamFailures(t *testing.T) {
	p := newBridgePKI(t)
	good := newTLSUpstream(t, p.upstreamConfig("h2"))
	other := newPKI(t, "someone else")
	wrongCert := newTLSUpstream(t, &tls.Config{Certificates: []tls.Certificate{other.leaf(t, registryName)}})
	tests := []struct {
		name      string
		addrs     []string
		noEdge    bool
		maint     bool
		wantOK    bool
		result    string
		logParts  []string
		clientErr string
	}{
		{name: "first refuses, second works", addrs: []string{closedAddr(t), good.addr}, wantOK: true, result: "ok"},
		{name: "wrong certificate, then a good one", addrs: []string{wrongCert.addr, good.addr}, wantOK: true, result: "ok",
			logParts: []string{"upstream connection failed", "upstream=" + wrongCert.addr, "certificate signed by unknown authority"}},
		{name: "only a wrong certificate", addrs: []string{wrongCert.addr}, result: "upstream_error",
			logParts: []string{"route=registry", "certificate signed by unknown authority"}, clientErr: "internal error"},
		{name: "mTLS upstream, no edge certificate", addrs: []string{good.addr}, noEdge: true, result: "upstream_error",
			logParts: []string{"route=registry", "refused the client certificate"}, clientErr: "internal error"},
		{name: "no healthy upstream", addrs: []string{good.addr}, maint: true, result: "no_upstream",
			logParts: []string{"route=registry", "no healthy upstream"}, clientErr: "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := p.route(t, tt.addrs...)
			if tt.noEdge {
				r.UpstreamTLS.Certificates = nil
			}
			if tt.maint {
				r.Pool.(*upstream.Pool).SetState(tt.addrs[0], upstream.StateMaint)
			}
			w := newWorld(t, Config{}, "", r)
			_, err := ping(t, w, p.nodeConfig("h2"))
			if tt.wantOK != (err == nil) {
				t.Fatalf("node handshake: %v", err)
			}
			if tt.clientErr != "" && !strings.Contains(err.Error(), tt.clientErr) {
				t.Errorf("node error %q, want %q", err, tt.clientErr)
			}
			w.logs.wait(t, "msg=connection", "mode=bridge", "result="+tt.result)
			if len(tt.logParts) > 0 {
				w.logs.wait(t, tt.logParts...)
			}
		})
	}
}

func TestBridgeClientDistrustsServeCert(t *testing.T) {
	p := newBridgePKI(t)
	up := newTLSUpstream(t, p.upstreamConfig())
	w := newWorld(t, Config{}, "", p.route(t, up.addr))
	cfg := p.nodeConfig()
	cfg.RootCAs = p.upstreamCA.pool // trusts the registry's CA, not the gateway's
	if _, err := ping(t, w, cfg); err == nil {
		t.Fatal("node accepted a certificate from a CA it does not trust")
	}
	w.logs.wait(t, "level=WARN", "does not trust the CA", "route=registry")
	w.logs.wait(t, "msg=connection", "result=client_error", "client TLS handshake")
}
