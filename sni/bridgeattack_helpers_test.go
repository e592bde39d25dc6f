package sni

import (
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/testkit"
)

// countingUpstream is a TLS upstream that counts the TCP connections it
// accepts: every one is a registry handshake the gateway started with the
// edge identity. Its configuration can be swapped between connections.
type countingUpstream struct {
	addr     string
	accepted atomic.Int64
	cfg      atomic.Pointer[tls.Config]
	protos   chan string // NegotiatedProtocol of each completed handshake
}

func newCountingUpstream(tb testing.TB, cfg *tls.Config) *countingUpstream {
	tb.Helper()
	u := &countingUpstream{protos: make(chan string, 64)}
	u.cfg.Store(cfg)
	u.addr = newTCPUpstream(tb, func(c *net.TCPConn) {
		u.accepted.Add(1)
		tc := tls.Server(c, u.cfg.Load())
		if err := tc.Handshake(); err != nil {
			return
		}
		select {
		case u.protos <- tc.ConnectionState().NegotiatedProtocol:
		default:
		}
		io.Copy(tc, tc)
		tc.CloseWrite()
	}).addr
	return u
}

// dialFrom opens a TCP connection to the world from the loopback address
// local ("127.0.0.2": another client address).
func (w *world) dialFrom(tb testing.TB, local string) *net.TCPConn {
	tb.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", w.addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// pingFrom is ping from the client address local.
func pingFrom(tb testing.TB, w *world, cfg *tls.Config, local string) (tls.ConnectionState, error) {
	tb.Helper()
	tc := tls.Client(w.dialFrom(tb, local), cfg)
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

// firstRecord reads the first TLS record the gateway sends on c: its
// type and payload (an alert's is level, description).
func firstRecord(tb testing.TB, c net.Conn) (typ byte, payload []byte) {
	tb.Helper()
	c.SetReadDeadline(time.Now().Add(waitLimit))
	defer c.SetReadDeadline(time.Time{})
	var hdr [recordHeaderLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		tb.Fatalf("reading the gateway's first record: %v", err)
	}
	payload = make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(c, payload); err != nil {
		tb.Fatalf("reading the gateway's first record: %v", err)
	}
	return hdr[0], payload
}

// dialsInProgress returns snigate_upstream_dials_in_progress for route.
func (w *world) dialsInProgress(tb testing.TB, route string) float64 {
	tb.Helper()
	return testkit.Value(tb, w.m.dialsActive.WithLabelValues(route))
}

// result returns snigate_connections_total for route and result on the
// world's listener.
func (w *world) result(tb testing.TB, route, result string) float64 {
	tb.Helper()
	return w.counter(tb, w.m.connections, w.addr, route, result)
}
