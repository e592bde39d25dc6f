package sni

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/pires/go-proxyproto"

	"github.com/snigate/snigate/internal/testnet"
)

// seamHandler is a BridgeHandler that reports what it was given and
// writes one line to the node.
type seamHandler struct {
	protos []string
	err    error
	got    chan *BridgeConn
}

func (h *seamHandler) NextProtos() []string { return h.protos }

func (h *seamHandler) ServeBridge(ctx context.Context, c *BridgeConn) error {
	h.got <- c
	fmt.Fprintf(c, "%s %s %s", c.ConnectionState().NegotiatedProtocol, c.Route, c.SNI)
	return h.err
}

// TestBridgeHandlerSeam: a bridge route with a Handler offers the
// handler's protocols, dials no upstream (its only upstream refuses
// connections and is marked down), hands over the node's address and
// counts the bytes the handler wrote; the handler's error kind becomes the
// connection's result.
func TestBridgeHandlerSeam(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		result string
	}{
		{name: "normal end", err: nil, result: "result=ok"},
		{name: "upstream", err: fmt.Errorf("registry went away: %w", ErrBridgeUpstream), result: "result=upstream_error"},
		{name: "idle", err: fmt.Errorf("%w: no request for 1m", ErrBridgeIdle), result: "result=idle"},
		{name: "other", err: errors.New("malformed request"), result: "result=client_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newBridgePKI(t)
			r := p.route(t, testnet.ClosedAddr(t))
			r.Pool.(interface{ CheckOnce(context.Context) }).CheckOnce(context.Background())
			h := &seamHandler{protos: []string{"h2", "http/1.1"}, err: tc.err, got: make(chan *BridgeConn, 1)}
			r.Handler = h
			w := newWorld(t, Config{}, "", r)
			raw := w.dial(t)
			tc2 := tls.Client(raw, p.nodeConfig("http/1.1", "h2"))
			got, err := io.ReadAll(tc2)
			const want = "h2 registry " + registryName
			if string(got) != want || (err != nil && !errors.Is(err, io.ErrUnexpectedEOF)) {
				t.Fatalf("node read %q, %v; want %q", got, err, want)
			}
			c := <-h.got
			if c.RemoteAddr().String() != raw.LocalAddr().String() || c.Client.String() != raw.LocalAddr().String() {
				t.Errorf("the handler saw the node at %v (Client %v), the node is %v", c.RemoteAddr(), c.Client, raw.LocalAddr())
			}
			if c.Draining == nil || c.IdleTimeout <= 0 {
				t.Errorf("BridgeConn without Draining (%v) or IdleTimeout (%v)", c.Draining, c.IdleTimeout)
			}
			w.logs.wait(t, "msg=connection", "mode=bridge", fmt.Sprintf("bytes_down=%d ", len(want)), tc.result)
		})
	}
}

// TestBridgeHandlerGetsTheProxyHeaderSource: through a trusted balancer,
// the handler's node address is the PROXY header's source.
func TestBridgeHandlerGetsTheProxyHeaderSource(t *testing.T) {
	p := newBridgePKI(t)
	r := p.route(t, testnet.ClosedAddr(t))
	h := &seamHandler{protos: []string{"http/1.1"}, got: make(chan *BridgeConn, 1)}
	r.Handler = h
	w := newWorld(t, Config{ProxyProtocolFrom: prefixes("127.0.0.0/8")}, "", r)
	raw := w.dial(t)
	src := &net.TCPAddr{IP: net.ParseIP("10.0.0.21"), Port: 53312}
	hdr, err := proxyproto.HeaderProxyFromAddrs(2, src, raw.RemoteAddr()).Format()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Write(hdr); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(tls.Client(raw, p.nodeConfig("http/1.1"))); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal(err)
	}
	if c := <-h.got; c.Client.String() != src.String() || c.RemoteAddr().String() != src.String() {
		t.Errorf("the handler saw the node at %v / %v, the PROXY header said %v", c.Client, c.RemoteAddr(), src)
	}
}
