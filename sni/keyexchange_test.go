package sni

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

// The key exchanges of the cases.
const kxHybrid, kxX25519, kxP256 = tls.X25519MLKEM768, tls.X25519, tls.CurveP256

// keyExchangeCases are the node's, the route's and the template's key exchanges and what each leg takes.
var keyExchangeCases = []struct {
	name        string
	nodeCurves  []tls.CurveID
	serveCurves []tls.CurveID // the route's ServeKeyExchanges
	upCurves    []tls.CurveID
	wantNode    tls.CurveID
	wantUp      [2]tls.CurveID   // full, then resumed
	wantOffers  [2][]tls.CurveID // what the upstream leg offered; nil: not checked
}{
	{name: "defaults: X25519 on the node leg, the hybrid on the full upstream handshake only",
		wantNode: kxX25519, wantUp: [2]tls.CurveID{kxHybrid, kxX25519}, wantOffers: [2][]tls.CurveID{nil, resumeKeyExchanges}},
	{name: "node offers only the hybrid: the hybrid, no retry", nodeCurves: []tls.CurveID{kxHybrid},
		wantNode: kxHybrid, wantUp: [2]tls.CurveID{kxHybrid, kxX25519}},
	{name: "node offers the hybrid and P-256: one share, the hybrid's", nodeCurves: []tls.CurveID{kxHybrid, kxP256},
		wantNode: kxHybrid, wantUp: [2]tls.CurveID{kxHybrid, kxX25519}},
	{name: "node offers X25519 only", nodeCurves: []tls.CurveID{kxX25519},
		wantNode: kxX25519, wantUp: [2]tls.CurveID{kxHybrid, kxX25519}},
	{name: "node offers P-256 only", nodeCurves: []tls.CurveID{kxP256},
		wantNode: kxP256, wantUp: [2]tls.CurveID{kxHybrid, kxX25519}},
	{name: "template X25519 only", upCurves: []tls.CurveID{kxX25519},
		wantNode: kxX25519, wantUp: [2]tls.CurveID{kxX25519, kxX25519}, wantOffers: [2][]tls.CurveID{{kxX25519}, {kxX25519}}},
	{name: "template P-256 only, kept on resumption", upCurves: []tls.CurveID{kxP256},
		wantNode: kxX25519, wantUp: [2]tls.CurveID{kxP256, kxP256}, wantOffers: [2][]tls.CurveID{{kxP256}, {kxP256}}},
	{name: "template lists the hybrid, kept on resumption", upCurves: []tls.CurveID{kxHybrid, kxX25519},
		wantNode: kxX25519, wantUp: [2]tls.CurveID{kxHybrid, kxHybrid}, wantOffers: [2][]tls.CurveID{{kxHybrid, kxX25519}, {kxHybrid, kxX25519}}},
	{name: "serve X25519 only: the node's hybrid offer is passed over, no retry", serveCurves: []tls.CurveID{kxX25519},
		wantNode: kxX25519, wantUp: [2]tls.CurveID{kxHybrid, kxX25519}},
	{name: "serve lists the hybrid: taken, as crypto/tls does", serveCurves: []tls.CurveID{kxHybrid, kxX25519},
		wantNode: kxHybrid, wantUp: [2]tls.CurveID{kxHybrid, kxX25519}},
	{name: "X25519 on both legs", serveCurves: []tls.CurveID{kxX25519}, upCurves: []tls.CurveID{kxX25519},
		wantNode: kxX25519, wantUp: [2]tls.CurveID{kxX25519, kxX25519}, wantOffers: [2][]tls.CurveID{{kxX25519}, {kxX25519}}},
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
	for _, tt := range keyExchangeCases {
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
		c := tls.Client(raw, lc.config(&tls.ClientHelloInfo{ServerName: registryName}, nil))
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
// post-quantum default, and for DeclineMemory that upstream is offered
// the default on resumption too. After that, resumption is classical
// again.
func TestUpstreamLegDeclinedSessionRedialsPostQuantum(t *testing.T) {
	p := newBridgePKI(t)
	upCfg := p.upstreamConfig("h2")
	up, offered := helloUpstream(t, upCfg)
	r := p.route(t, up.addr)
	w := newWorld(t, Config{}, "", r)
	node := p.nodeConfig("h2")
	defaults := defaultClientCurves(t)
	steps := []struct {
		name        string
		before      func()
		wantOffers  [][]tls.CurveID // each upstream ClientHello of the connection
		wantCurve   tls.CurveID
		wantResumed bool
	}{
		{name: "first connection", wantOffers: [][]tls.CurveID{defaults}, wantCurve: tls.X25519MLKEM768},
		{name: "after the upstream's ticket keys changed", before: func() { upCfg.SetSessionTicketKeys([][32]byte{{1}}) },
			wantOffers: [][]tls.CurveID{resumeKeyExchanges, defaults}, wantCurve: tls.X25519MLKEM768},
		{name: "within DeclineMemory: the default offer, resumed", wantOffers: [][]tls.CurveID{defaults}, wantCurve: tls.X25519MLKEM768, wantResumed: true},
		{name: "after DeclineMemory", before: func() { r.declines.note(up.addr+" "+registryName, time.Now().Add(-DeclineMemory)) },
			wantOffers: [][]tls.CurveID{resumeKeyExchanges}, wantCurve: tls.X25519, wantResumed: true},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		if _, err := ping(t, w, node); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for i, want := range st.wantOffers {
			if got := <-offered; !slices.Equal(got, want) {
				t.Errorf("%s: upstream ClientHello %d offered %v, want %v", st.name, i+1, got, want)
			}
		}
		ust := <-up.states
		if ust.CurveID != st.wantCurve || ust.DidResume != st.wantResumed {
			t.Errorf("%s: upstream leg %v resumed %v, want %v resumed %v", st.name, ust.CurveID, ust.DidResume, st.wantCurve, st.wantResumed)
		}
	}
	if logs := w.logs.String(); strings.Contains(logs, "level=WARN") {
		t.Errorf("the redial was logged as a problem:\n%s", logs)
	}
}

// TestUpstreamLegReplicasWithoutSharedTicketKeys: behind one address,
// upstreams that do not share ticket keys (here every handshake gets new
// ones, as replicas behind a Service would) decline nearly every session.
// Only the first decline costs a second handshake; the connections after
// it make one, with the post-quantum default, as before resumption was
// classical. Without DeclineMemory every connection made two.
func TestUpstreamLegReplicasWithoutSharedTicketKeys(t *testing.T) {
	p := newBridgePKI(t)
	upCfg := p.upstreamConfig("h2")
	offered := make(chan []tls.CurveID, 16)
	var replica atomic.Int32
	upCfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		offered <- slices.Clone(h.SupportedCurves)
		c := upCfg.Clone()
		c.GetConfigForClient = nil
		c.SetSessionTicketKeys([][32]byte{{byte(replica.Add(1))}}) // another replica's keys
		return c, nil
	}
	up := newTLSUpstream(t, upCfg)
	w := newWorld(t, Config{}, "", p.route(t, up.addr))
	node := p.nodeConfig("h2")
	hellos := 0
	for i := range 4 {
		if _, err := ping(t, w, node); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		ust := <-up.states
		if ust.DidResume || ust.CurveID != tls.X25519MLKEM768 {
			t.Errorf("connection %d: upstream leg %v resumed %v, want a full %v handshake", i+1, ust.CurveID, ust.DidResume, tls.X25519MLKEM768)
		}
	drain:
		for {
			select {
			case <-offered:
				hellos++
			default:
				break drain
			}
		}
	}
	if hellos != 5 {
		t.Errorf("4 connections made %d upstream handshakes, want 5 (one redial, after the first decline)", hellos)
	}
}

// TestUpstreamLegPostQuantumOnlyUpstream: an upstream that accepts only
// the hybrid refuses a resumption offering classical groups (alert
// handshake_failure), and crypto/tls drops a session whose resumption
// failed. The dial goes on with the post-quantum default (a full
// handshake), and for DeclineMemory that upstream is offered the default
// at once, which resumes: no connection fails, only the first resumption
// pays a refused attempt. Without the redial every connection after the
// first failed.
func TestUpstreamLegPostQuantumOnlyUpstream(t *testing.T) {
	p := newBridgePKI(t)
	upCfg := p.upstreamConfig("h2")
	upCfg.CurvePreferences = []tls.CurveID{tls.X25519MLKEM768}
	up, offered := helloUpstream(t, upCfg)
	w := newWorld(t, Config{}, "", p.route(t, up.addr))
	node := p.nodeConfig("h2")
	defaults := defaultClientCurves(t)
	for i, want := range []struct {
		offers  [][]tls.CurveID
		resumed bool
	}{
		{offers: [][]tls.CurveID{defaults}},
		{offers: [][]tls.CurveID{resumeKeyExchanges, defaults}},
		{offers: [][]tls.CurveID{defaults}, resumed: true},
	} {
		if _, err := ping(t, w, node); err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		for j, wo := range want.offers {
			if got := <-offered; !slices.Equal(got, wo) {
				t.Errorf("connection %d: upstream ClientHello %d offered %v, want %v", i+1, j+1, got, wo)
			}
		}
		ust := <-up.states
		if ust.CurveID != tls.X25519MLKEM768 || ust.DidResume != want.resumed {
			t.Errorf("connection %d: upstream leg %v resumed %v, want %v resumed %v", i+1, ust.CurveID, ust.DidResume, tls.X25519MLKEM768, want.resumed)
		}
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
