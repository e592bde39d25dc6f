package sni

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"testing"
	"time"
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

// pki is a throwaway CA with helpers to issue server and client leaves.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newPKI(tb testing.TB, name string) *pki {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &pki{cert: cert, key: key, pool: x509.NewCertPool()}
	p.pool.AddCert(cert)
	return p
}

// leaf issues a certificate for names (server) or a client certificate
// when names is empty.
func (p *pki) leaf(tb testing.TB, names ...string) tls.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "edge"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		DNSNames:     names,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if len(names) == 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		tb.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
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
