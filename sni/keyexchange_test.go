package sni

import (
	"crypto/tls"
	"io"
	"net"
	"slices"
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

// TestBridgeKeyExchange checks the key exchange of each leg: the node's
// leg uses what the node offers (the post-quantum hybrid when it offers
// it), the upstream leg what the route's template allows (crypto/tls's
// default, the hybrid, when it sets nothing), and both legs resume with
// the same group.
func TestBridgeKeyExchange(t *testing.T) {
	p := newBridgePKI(t)
	tests := []struct {
		name         string
		nodeCurves   []tls.CurveID
		serveCurves  []tls.CurveID // the route's ServeKeyExchanges
		upCurves     []tls.CurveID
		wantNode     tls.CurveID
		wantUp       tls.CurveID
		wantUpOffers []tls.CurveID // nil: not checked
	}{
		{name: "defaults: post-quantum on both legs", wantNode: tls.X25519MLKEM768, wantUp: tls.X25519MLKEM768},
		{name: "template X25519 only", upCurves: []tls.CurveID{tls.X25519},
			wantNode: tls.X25519MLKEM768, wantUp: tls.X25519, wantUpOffers: []tls.CurveID{tls.X25519}},
		{name: "node offers X25519 only", nodeCurves: []tls.CurveID{tls.X25519},
			wantNode: tls.X25519, wantUp: tls.X25519MLKEM768},
		{name: "template P-256 only", upCurves: []tls.CurveID{tls.CurveP256},
			wantNode: tls.X25519MLKEM768, wantUp: tls.CurveP256, wantUpOffers: []tls.CurveID{tls.CurveP256}},
		{name: "serve X25519 only: the node's hybrid offer is passed over, no retry", serveCurves: []tls.CurveID{tls.X25519},
			wantNode: tls.X25519, wantUp: tls.X25519MLKEM768},
		{name: "X25519 on both legs", serveCurves: []tls.CurveID{tls.X25519}, upCurves: []tls.CurveID{tls.X25519},
			wantNode: tls.X25519, wantUp: tls.X25519, wantUpOffers: []tls.CurveID{tls.X25519}},
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
				if st.CurveID != tt.wantNode || ust.CurveID != tt.wantUp {
					t.Errorf("connection %d: node leg %v, upstream leg %v; want %v, %v", i+1, st.CurveID, ust.CurveID, tt.wantNode, tt.wantUp)
				}
				if tt.wantUpOffers != nil && !slices.Equal(offers, tt.wantUpOffers) {
					t.Errorf("connection %d: the upstream leg offered %v, want only %v", i+1, offers, tt.wantUpOffers)
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
