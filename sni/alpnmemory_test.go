package sni

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/upstream"
)

func TestALPNMemory(t *testing.T) {
	tests := []struct {
		name   string
		learn  [][3]string // addr, offered (comma-separated), chosen
		recall string
		want   string
		wantOK bool
	}{
		{name: "nothing learned", recall: "h2,http/1.1"},
		{name: "learned", learn: [][3]string{{"a", "h2,http/1.1", "h2"}}, recall: "h2,http/1.1", want: "h2", wantOK: true},
		{name: "another list", learn: [][3]string{{"a", "h2,http/1.1", "h2"}}, recall: "http/1.1"},
		{name: "no protocol chosen", learn: [][3]string{{"a", "h2", ""}}, recall: "h2", wantOK: true},
		{name: "no list offered", learn: [][3]string{{"a", "", ""}}, recall: "", wantOK: true},
		{name: "upstreams agree", learn: [][3]string{{"a", "h2,http/1.1", "h2"}, {"b", "h2,http/1.1", "h2"}}, recall: "h2,http/1.1", want: "h2", wantOK: true},
		{name: "upstreams disagree: predicted, checked on the dial", learn: [][3]string{{"a", "h2,http/1.1", "h2"}, {"b", "h2,http/1.1", "http/1.1"}}, recall: "h2,http/1.1"},
		{name: "refreshed by a later dial", learn: [][3]string{{"a", "h2,http/1.1", "h2"}, {"a", "h2,http/1.1", "http/1.1"}}, recall: "h2,http/1.1", want: "http/1.1", wantOK: true},
		{name: "lists differ only in framing", learn: [][3]string{{"a", "ab", "ab"}}, recall: "a,b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m alpnMemory
			for _, l := range tt.learn {
				m.learn(l[0], list(l[1]), l[2])
			}
			got, ok := m.recall(list(tt.recall))
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("recall(%q) = %q, %v; want %q, %v", tt.recall, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestALPNPredict: for a list no answer is remembered for, the memory
// guesses what the upstreams will choose (the dial checks it).
func TestALPNPredict(t *testing.T) {
	tests := []struct {
		name    string
		learn   [][3]string // addr, offered (comma-separated), chosen
		predict string
		want    string
	}{
		{name: "nothing learned, http/1.1 offered", predict: "h2,http/1.1", want: "http/1.1"},
		{name: "nothing learned, no http/1.1", predict: "h2", want: "h2"},
		{name: "nothing offered", learn: [][3]string{{"a", "h2,http/1.1", "h2"}}, predict: "", want: ""},
		{name: "the upstream chose a name offered", learn: [][3]string{{"a", "h2,http/1.1", "h2"}}, predict: "x-made-up,h2,http/1.1", want: "h2"},
		{name: "the list sharing most names wins", learn: [][3]string{{"a", "h2,http/1.1", "h2"}, {"a", "http/1.1,spdy/3", "http/1.1"}},
			predict: "http/1.1,spdy/3,x", want: "http/1.1"},
		{name: "no chosen name offered", learn: [][3]string{{"a", "h2", "h2"}}, predict: "x,http/1.1", want: "http/1.1"},
		{name: "an upstream without ALPN", learn: [][3]string{{"a", "h2,http/1.1", ""}}, predict: "http/1.1", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m alpnMemory
			for _, l := range tt.learn {
				m.learn(l[0], list(l[1]), l[2])
			}
			if got := m.predict(list(tt.predict)); got != tt.want {
				t.Errorf("predict(%q) = %q, want %q", tt.predict, got, tt.want)
			}
		})
	}
}

// TestALPNColdDials: the dials made during a handshake to learn happen
// only while nothing is remembered, one at a time, alpnColdDials at most.
func TestALPNColdDials(t *testing.T) {
	var m alpnMemory
	if !m.startLearning() {
		t.Fatal("a cold memory refused its first learning dial")
	}
	if m.startLearning() {
		t.Fatal("a second learning dial while one is in progress")
	}
	m.endLearning()
	for range alpnColdDials - 1 {
		if !m.startLearning() {
			t.Fatal("a learning dial refused before alpnColdDials")
		}
		m.endLearning()
	}
	if m.startLearning() || m.cold() {
		t.Fatalf("more than %d learning dials", alpnColdDials)
	}
	var warm alpnMemory
	warm.learn("a", list("h2"), "h2")
	if warm.startLearning() || warm.cold() {
		t.Error("a learning dial once an answer is remembered")
	}
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// The memory per upstream is bounded: a client cycling through made-up
// ALPN lists forgets the answers used least often, not the ones in use.
func TestALPNMemoryBounded(t *testing.T) {
	var m alpnMemory
	m.learn("a", list("h2,http/1.1"), "h2")
	for i := range 10 * alpnMemorySize {
		m.learn("a", list(fmt.Sprintf("junk-%d", i)), "")
		if _, ok := m.recall(list("h2,http/1.1")); !ok {
			t.Fatalf("after %d made-up lists the answer in use was forgotten", i+1)
		}
	}
	if n := len(m.byAddr["a"]); n > alpnMemorySize {
		t.Errorf("memory holds %d answers for one upstream, want at most %d", n, alpnMemorySize)
	}
}

// Regression (issue 14 item 2): the bridge dialed the upstream from every
// ClientHello, to mirror ALPN, so 3,000 bare hellos cost 2,992 registry
// handshakes with the edge certificate and each stalled hello held a
// registry connection. Once one real connection has taught the route what
// the upstream chooses, the client's handshake completes first and a hello
// that never finishes its handshake costs no upstream connection, while
// h2 and http/1.1 clients still get the protocol the upstream chose.
func TestBridgeBareHellosDialNoUpstream(t *testing.T) {
	p := newBridgePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2", "http/1.1"))
	// The bare hellos all come from 127.0.0.1: no per-client limit, so
	// that the test counts what they cost upstream, not what the limit cuts.
	w := newWorld(t, Config{MaxConnectionsPerClient: -1}, "", p.route(t, up.addr))
	if st, err := ping(t, w, p.nodeConfig("h2", "http/1.1")); err != nil || st.NegotiatedProtocol != "h2" {
		t.Fatalf("first connection: %v, protocol %q", err, st.NegotiatedProtocol)
	}
	<-up.protos
	hello := captureHello(t, p.nodeConfig("h2", "http/1.1"))
	const bare = 200 // enough to show the cost; 500 outran the failure deadline under -race on a loaded 2-core box
	stalled := sendBareHellos(t, w, hello, bare)
	for _, c := range stalled {
		// The gateway answers with its ServerHello: it is past the point
		// where it used to dial, waiting for the client's Finished.
		if typ, _ := firstRecord(t, c); typ != recordTypeHandshake {
			t.Fatalf("stalled hello: gateway answered a record of type %d, want its handshake", typ)
		}
	}
	w.waitSessions(t, len(stalled))
	if n := up.accepted.Load(); n != 1 {
		t.Errorf("the upstream accepted %d connections for 1 real connection and %d bare hellos; want 1", n, bare)
	}
	if n := w.dialsInProgress(t, "registry"); n != 0 {
		t.Errorf("%v upstream dials in progress while %d hellos stall; want 0", n, len(stalled))
	}
	for _, c := range stalled {
		c.Close()
	}
	w.waitSessions(t, 0)
	for _, tt := range []struct {
		name   string
		client []string
		want   string
	}{
		{name: "h2 and http/1.1 client", client: []string{"h2", "http/1.1"}, want: "h2"},
		{name: "http/1.1 client", client: []string{"http/1.1"}, want: "http/1.1"},
		{name: "http/1.1 client again (remembered)", client: []string{"http/1.1"}, want: "http/1.1"},
		{name: "h2 client", client: []string{"h2"}, want: "h2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := ping(t, w, p.nodeConfig(tt.client...))
			if err != nil {
				t.Fatal(err)
			}
			if got := <-up.protos; st.NegotiatedProtocol != tt.want || got != tt.want {
				t.Errorf("node got %q, upstream %q; want %q on both", st.NegotiatedProtocol, got, tt.want)
			}
		})
	}
}

// sendBareHellos sends hello on n connections: half are closed at once,
// the other half, returned, stay silent after it.
func sendBareHellos(t *testing.T, w *world, hello []byte, n int) []net.Conn {
	t.Helper()
	var stalled []net.Conn
	for i := range n {
		c := w.dial(t)
		if _, err := c.Write(hello); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			c.Close() // sent, then closed
			continue
		}
		stalled = append(stalled, c) // sent, then silent
	}
	return stalled
}

// An upstream that chooses another protocol than the one remembered (its
// configuration changed) fails that connection cleanly: the node, already
// given the remembered protocol, gets no byte of a mismatched stream; the
// memory is updated, so the next node gets the new protocol end to end.
func TestBridgeALPNMismatchFailsCleanly(t *testing.T) {
	p := newBridgePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2"))
	w := newWorld(t, Config{}, "", p.route(t, up.addr))
	node := p.nodeConfig("h2", "http/1.1")
	if st, err := ping(t, w, node); err != nil || st.NegotiatedProtocol != "h2" {
		t.Fatalf("first connection: %v, protocol %q", err, st.NegotiatedProtocol)
	}
	<-up.protos
	up.cfg.Store(p.upstreamConfig("http/1.1"))

	tc := tls.Client(w.dial(t), node)
	if err := tc.Handshake(); err != nil {
		t.Fatalf("node handshake: %v", err)
	}
	if got := tc.ConnectionState().NegotiatedProtocol; got != "h2" {
		t.Fatalf("node was given %q, want the remembered h2", got)
	}
	tc.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	if got, _ := io.ReadAll(tc); len(got) != 0 {
		t.Errorf("node read %q from an upstream that speaks another protocol", got)
	}
	tc.Close()
	w.logs.wait(t, "msg=connection", "mode=bridge", "result=upstream_error", "upstream chose another ALPN protocol")

	st, err := ping(t, w, node)
	if err != nil {
		t.Fatal(err)
	}
	<-up.protos // the refused connection's
	if got := <-up.protos; st.NegotiatedProtocol != "http/1.1" || got != "http/1.1" {
		t.Errorf("after the change: node got %q, upstream %q; want http/1.1 on both", st.NegotiatedProtocol, got)
	}
}

// A dial made after the node's handshake is still retried on the next
// candidate: the node has been told nothing yet.
func TestBridgeRememberedDialRetriesNextUpstream(t *testing.T) {
	p := newBridgePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2"))
	down := closedAddr(t)
	w := newWorld(t, Config{}, "", p.route(t, down, up.addr))
	for i := range 4 {
		st, err := ping(t, w, p.nodeConfig("h2", "http/1.1"))
		if err != nil || st.NegotiatedProtocol != "h2" {
			t.Fatalf("connection %d: %v, protocol %q", i+1, err, st.NegotiatedProtocol)
		}
	}
	// Round-robin puts the refusing upstream first for connections 1 and
	// 3; the third was dialed after its handshake, from memory.
	if n := w.counter(t, w.m.dialFailures, "registry", down); n != 2 {
		t.Errorf("dial failures on the refusing upstream = %v, want 2 (each retried on the next)", n)
	}
	testkit.Poll(t, "4 connections counted ok", func() bool { return w.result(t, "registry", "ok") == 4 })
}

// A route whose upstreams are all unavailable still fails the node's
// handshake (an alert, result no_upstream), memory or not: the dial is
// deferred only when a candidate exists.
func TestBridgeRememberedNoUpstreamFailsHandshake(t *testing.T) {
	p := newBridgePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2"))
	r := p.route(t, up.addr)
	w := newWorld(t, Config{}, "", r)
	if _, err := ping(t, w, p.nodeConfig("h2")); err != nil {
		t.Fatal(err)
	}
	r.Pool.(*upstream.Pool).SetState(up.addr, upstream.StateMaint)
	_, err := ping(t, w, p.nodeConfig("h2"))
	if err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Fatalf("node handshake with every upstream in maintenance: %v, want an internal_error alert", err)
	}
	w.logs.wait(t, "msg=connection", "result=no_upstream")
}
