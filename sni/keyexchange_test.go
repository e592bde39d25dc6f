package sni

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
)

// helloUpstream is a TLS upstream that also reports the groups each
// ClientHello offered.
func helloUpstream(t *testing.T, cfg *tls.Config) (*tlsUpstream, <-chan []tls.CurveID) {
	offered := make(chan []tls.CurveID, 16)
	cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		offered <- slices.Clone(h.SupportedCurves)
		return nil, nil
	}
	return newTLSUpstream(t, cfg), offered
}

// TestBridgeKeyExchange checks the key exchange of each leg. The node's
// leg takes X25519 when the node sent an X25519 share (Go's default client
// sends one beside the hybrid's) and the post-quantum hybrid when that is
// all the node sent, never with a HelloRetryRequest; a route's
// ServeKeyExchanges decides as crypto/tls does. The upstream leg offers
// what the route's template allows, else crypto/tls's default (the
// hybrid) on a full handshake and X25519 on a resumed one. Before, the
// node leg always took the hybrid from a Go client and the upstream leg
// paid ML-KEM on every resumption too.
func TestBridgeKeyExchange(t *testing.T) {
	p := newBridgePKI(t)
	const pq, x, p256 = tls.X25519MLKEM768, tls.X25519, tls.CurveP256
	tests := []struct {
		name        string
		nodeCurves  []tls.CurveID
		serveCurves []tls.CurveID // the route's ServeKeyExchanges
		upCurves    []tls.CurveID
		wantNode    tls.CurveID
		wantUp      [2]tls.CurveID   // full, then resumed
		wantOffers  [2][]tls.CurveID // what the upstream leg offered; nil: not checked
	}{
		{name: "defaults: X25519 on the node leg, the hybrid on the full upstream handshake only",
			wantNode: x, wantUp: [2]tls.CurveID{pq, x}, wantOffers: [2][]tls.CurveID{nil, resumeKeyExchanges}},
		{name: "node offers only the hybrid: the hybrid, no retry", nodeCurves: []tls.CurveID{pq},
			wantNode: pq, wantUp: [2]tls.CurveID{pq, x}},
		{name: "node offers the hybrid and P-256: one share, the hybrid's", nodeCurves: []tls.CurveID{pq, p256},
			wantNode: pq, wantUp: [2]tls.CurveID{pq, x}},
		{name: "node offers X25519 only", nodeCurves: []tls.CurveID{x},
			wantNode: x, wantUp: [2]tls.CurveID{pq, x}},
		{name: "node offers P-256 only", nodeCurves: []tls.CurveID{p256},
			wantNode: p256, wantUp: [2]tls.CurveID{pq, x}},
		{name: "template X25519 only", upCurves: []tls.CurveID{x},
			wantNode: x, wantUp: [2]tls.CurveID{x, x}, wantOffers: [2][]tls.CurveID{{x}, {x}}},
		{name: "template P-256 only, kept on resumption", upCurves: []tls.CurveID{p256},
			wantNode: x, wantUp: [2]tls.CurveID{p256, p256}, wantOffers: [2][]tls.CurveID{{p256}, {p256}}},
		{name: "template lists the hybrid, kept on resumption", upCurves: []tls.CurveID{pq, x},
			wantNode: x, wantUp: [2]tls.CurveID{pq, pq}, wantOffers: [2][]tls.CurveID{{pq, x}, {pq, x}}},
		{name: "serve X25519 only: the node's hybrid offer is passed over, no retry", serveCurves: []tls.CurveID{x},
			wantNode: x, wantUp: [2]tls.CurveID{pq, x}},
		{name: "serve lists the hybrid: taken, as crypto/tls does", serveCurves: []tls.CurveID{pq, x},
			wantNode: pq, wantUp: [2]tls.CurveID{pq, x}},
		{name: "X25519 on both legs", serveCurves: []tls.CurveID{x}, upCurves: []tls.CurveID{x},
			wantNode: x, wantUp: [2]tls.CurveID{x, x}, wantOffers: [2][]tls.CurveID{{x}, {x}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, offered := helloUpstream(t, p.upstreamConfig("h2"))
			r := p.route(t, up.addr)
			r.UpstreamTLS.CurvePreferences = tt.upCurves
			r.ServeKeyExchanges = tt.serveCurves
			w := newWorld(t, Config{}, "", r)
			node := p.nodeConfig("h2")
			node.CurvePreferences = tt.nodeCurves
			node.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			for i, resumed := range []bool{false, true} {
				st, err := ping(t, w, node)
				if err != nil {
					t.Fatal(err)
				}
				ust := <-up.states
				offers := <-offered
				if st.CurveID != tt.wantNode || ust.CurveID != tt.wantUp[i] {
					t.Errorf("connection %d: node leg %v, upstream leg %v; want %v, %v", i+1, st.CurveID, ust.CurveID, tt.wantNode, tt.wantUp[i])
				}
				if want := tt.wantOffers[i]; want != nil && !slices.Equal(offers, want) {
					t.Errorf("connection %d: the upstream leg offered %v, want %v", i+1, offers, want)
				}
				if st.HelloRetryRequest {
					t.Errorf("connection %d: the node leg needed a HelloRetryRequest (an extra round trip)", i+1)
				}
				if st.DidResume != resumed || ust.DidResume != resumed {
					t.Errorf("connection %d: DidResume node %v, upstream %v; want %v on both", i+1, st.DidResume, ust.DidResume, resumed)
				}
			}
		})
	}
}

// TestUpstreamLegResumedSkipsClientAuthWait checks that only a full
// handshake in which the upstream asked for the client certificate makes
// confirmClientAuth wait for the upstream's verdict: a resumed TLS 1.3
// session carries no CertificateRequest, so it never waits.
func TestUpstreamLegResumedSkipsClientAuthWait(t *testing.T) {
	p := newBridgePKI(t)
	up := newTLSUpstream(t, p.upstreamConfig())
	r := p.route(t, up.addr)
	r.prepare()
	for i, resumed := range []bool{false, true} {
		raw, err := net.Dial("tcp", up.addr)
		if err != nil {
			t.Fatal(err)
		}
		lc := &legConfig{route: r, addr: up.addr, raw: raw}
		c := tls.Client(raw, lc.config(&tls.ClientHelloInfo{ServerName: registryName}))
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		// The echo makes the client read the upstream's session ticket.
		c.Write([]byte("x"))
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		<-up.states
		if got := c.ConnectionState().DidResume; got != resumed {
			t.Fatalf("connection %d: DidResume = %v, want %v", i+1, got, resumed)
		}
		if lc.certRequested == resumed {
			t.Errorf("connection %d (resumed %v): certRequested = %v: confirmClientAuth would wait %v",
				i+1, resumed, lc.certRequested, lc.certRequested)
		}
	}
}

// TestUpstreamLegDeclinedSessionRedialsPostQuantum: a session offered
// with resumeKeyExchanges that the upstream declines (here its ticket
// keys changed, as after a restart) would make a full handshake without
// the hybrid; the gateway abandons it and dials again with the
// post-quantum default, and the connection after that resumes the new
// session with X25519.
func TestUpstreamLegDeclinedSessionRedialsPostQuantum(t *testing.T) {
	p := newBridgePKI(t)
	upCfg := p.upstreamConfig("h2")
	up, offered := helloUpstream(t, upCfg)
	w := newWorld(t, Config{}, "", p.route(t, up.addr))
	node := p.nodeConfig("h2")
	step := func(name string, wantOffers [][]tls.CurveID, wantCurve tls.CurveID, wantResumed bool) {
		t.Helper()
		if _, err := ping(t, w, node); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, want := range wantOffers {
			if got := <-offered; !slices.Equal(got, want) {
				t.Errorf("%s: upstream ClientHello %d offered %v, want %v", name, i+1, got, want)
			}
		}
		ust := <-up.states
		if ust.CurveID != wantCurve || ust.DidResume != wantResumed {
			t.Errorf("%s: upstream leg %v resumed %v, want %v resumed %v", name, ust.CurveID, ust.DidResume, wantCurve, wantResumed)
		}
	}
	defaults := defaultClientCurves(t)
	step("first connection", [][]tls.CurveID{defaults}, tls.X25519MLKEM768, false)
	upCfg.SetSessionTicketKeys([][32]byte{{1}})
	step("after the upstream's ticket keys changed", [][]tls.CurveID{resumeKeyExchanges, defaults}, tls.X25519MLKEM768, false)
	step("the new session", [][]tls.CurveID{resumeKeyExchanges}, tls.X25519, true)
	if logs := w.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Errorf("the redial was logged as a problem:\n%s", logs)
	}
}

// defaultClientCurves is the supported_groups list of crypto/tls's
// default client configuration, as a server sees it.
func defaultClientCurves(t *testing.T) []tls.CurveID {
	t.Helper()
	got := make(chan []tls.CurveID, 1)
	srv := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		got <- slices.Clone(h.SupportedCurves)
		return nil, errors.New("seen")
	}}
	c, s := net.Pipe()
	go tls.Server(s, srv).Handshake()
	tls.Client(c, &tls.Config{InsecureSkipVerify: true}).Handshake()
	c.Close()
	s.Close()
	return <-got
}
