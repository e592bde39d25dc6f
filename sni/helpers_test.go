package sni

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
)

// recConn records what a tls.Client writes and fails its first read, so
// that Handshake stops right after sending the ClientHello.
type recConn struct {
	net.Conn // nil: any other use panics
	buf      bytes.Buffer
}

func (c *recConn) Write(p []byte) (int, error)      { return c.buf.Write(p) }
func (c *recConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *recConn) Close() error                     { return nil }
func (c *recConn) SetDeadline(time.Time) error      { return nil }
func (c *recConn) SetWriteDeadline(time.Time) error { return nil }
func (c *recConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443} }
func (c *recConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 50000} }

// captureHello returns the bytes crypto/tls's client sends first with cfg:
// its real ClientHello.
func captureHello(tb testing.TB, cfg *tls.Config) []byte {
	tb.Helper()
	c := &recConn{}
	if err := tls.Client(c, cfg).Handshake(); err == nil {
		tb.Fatal("handshake against a recording conn succeeded")
	}
	return c.buf.Bytes()
}

// reframe re-encodes the handshake payload of the TLS records in raw into
// records of at most size payload bytes, as a client splitting its
// ClientHello over several records would.
func reframe(tb testing.TB, raw []byte, size int) []byte {
	tb.Helper()
	var payload []byte
	vers := raw[1:3]
	for len(raw) > 0 {
		n := int(raw[3])<<8 | int(raw[4])
		payload = append(payload, raw[5:5+n]...)
		raw = raw[5+n:]
	}
	var out []byte
	for len(payload) > 0 {
		k := min(size, len(payload))
		out = append(out, recordTypeHandshake, vers[0], vers[1], byte(k>>8), byte(k))
		out = append(out, payload[:k]...)
		payload = payload[k:]
	}
	return out
}

// manyALPN returns n protocol names, enough to push a ClientHello past
// 4 KiB.
func manyALPN(n int) []string {
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprintf("proto-%04d", i)
	}
	p[n-1] = "h2"
	return p
}

// testCA is a throwaway CA (internal/pki) that fails the test on errors.
type testCA struct {
	*pki.Authority
	pool *x509.CertPool
}

func newPKI(tb testing.TB, name string) *testCA {
	tb.Helper()
	a, err := pki.NewAuthority(name)
	if err != nil {
		tb.Fatal(err)
	}
	return &testCA{Authority: a, pool: a.Pool()}
}

// leaf issues a certificate for names (server) or a client certificate
// when names is empty.
func (p *testCA) leaf(tb testing.TB, names ...string) tls.Certificate {
	tb.Helper()
	l, err := p.Issue(pki.CommonName("edge"), pki.SANs(names...))
	if err != nil {
		tb.Fatal(err)
	}
	return l.Pair
}

// ticketHello returns a ClientHello that carries a session ticket of at
// least ticketLen bytes: a real handshake with a server whose WrapSession
// pads its tickets, then the resuming client's first flight.
func ticketHello(tb testing.TB, ticketLen int) []byte {
	tb.Helper()
	ca := newPKI(tb, "ticket CA")
	srvCfg := &tls.Config{
		Certificates: []tls.Certificate{ca.leaf(tb, "registry.example.com")},
		MaxVersion:   tls.VersionTLS12, // the ticket is sent in the hello itself
		WrapSession: func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
			b, err := ss.Bytes()
			return append(b, make([]byte, ticketLen)...), err
		},
	}
	cache := tls.NewLRUClientSessionCache(1)
	cliCfg := &tls.Config{ServerName: "registry.example.com", RootCAs: ca.pool, ClientSessionCache: cache}
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() {
		err := tls.Server(b, srvCfg).Handshake()
		b.Close()
		done <- err
	}()
	c := tls.Client(a, cliCfg)
	if err := c.Handshake(); err != nil {
		tb.Fatal(err)
	}
	a.Close()
	if err := <-done; err != nil && !errors.Is(err, io.EOF) {
		tb.Fatal(err)
	}
	return captureHello(tb, cliCfg)
}
