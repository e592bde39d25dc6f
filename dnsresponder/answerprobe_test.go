package dnsresponder

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testnet"
)

const checkName = "registry.example.test"

// probeServer accepts on 127.0.0.1:0 and gives each connection to serve,
// until the test ends.
func probeServer(t *testing.T, serve func(net.Conn)) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return netip.MustParseAddrPort(ln.Addr().String())
}

// tlsServing is a TLS server for checkName; configure adjusts it.
func tlsServing(t *testing.T, configure func(*tls.Config)) func(net.Conn) {
	ca, err := pki.NewAuthority("answer check CA")
	if err != nil {
		t.Fatal(err)
	}
	cert, _, _, err := ca.Leaf("gateway", checkName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if configure != nil {
		configure(cfg)
	}
	return func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		tls.Server(c, cfg).Handshake() //nolint:errcheck // the client stops after the ServerHello
	}
}

// requireClientCert makes a route that requires node identity of c.
func requireClientCert(c *tls.Config) {
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.ClientCAs = nil // no client could pass; the ServerHello still comes first
}

// handshakeCases are the servers an answer check meets and what it says of each.
var handshakeCases = []struct {
	name    string
	addr    func(t *testing.T) netip.AddrPort
	wantErr string // "" passes
}{
	{name: "TLS 1.3 ServerHello", addr: func(t *testing.T) netip.AddrPort { return probeServer(t, tlsServing(t, nil)) }},
	{name: "TLS 1.2 ServerHello", addr: func(t *testing.T) netip.AddrPort {
		return probeServer(t, tlsServing(t, func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }))
	}},
	{name: "route requiring a client certificate, TLS 1.3", addr: func(t *testing.T) netip.AddrPort {
		return probeServer(t, tlsServing(t, requireClientCert))
	}},
	{name: "route requiring a client certificate, TLS 1.2", addr: func(t *testing.T) netip.AddrPort {
		return probeServer(t, tlsServing(t, func(c *tls.Config) { requireClientCert(c); c.MaxVersion = tls.VersionTLS12 }))
	}},
	{name: "server that requires an ALPN protocol it knows (a bridge route)", addr: func(t *testing.T) netip.AddrPort {
		return probeServer(t, tlsServing(t, func(c *tls.Config) { c.NextProtos = []string{"h2", "http/1.1"} }))
	}},
	{name: "server that knows the check's protocol only", addr: func(t *testing.T) netip.AddrPort {
		return probeServer(t, tlsServing(t, func(c *tls.Config) { c.NextProtos = []string{CheckALPN} }))
	}},
	{name: "name not routed: alert", wantErr: "tls handshake for registry.example.test: remote error", addr: func(t *testing.T) netip.AddrPort {
		return probeServer(t, tlsServing(t, func(c *tls.Config) {
			c.Certificates = nil
			c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, net.ErrClosed }
		}))
	}},
	{name: "accepts and closes", wantErr: "EOF", addr: func(t *testing.T) netip.AddrPort {
		// Half-closed, then read to the end: a close with the
		// ClientHello unread would reset the connection instead
		// (read: connection reset by peer, under load).
		return probeServer(t, func(c net.Conn) {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, c)
		})
	}},
	{name: "answers plain HTTP", wantErr: "tls handshake", addr: func(t *testing.T) netip.AddrPort {
		return probeServer(t, func(c net.Conn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) })
	}},
	{name: "nothing listening", wantErr: "connect: ", addr: func(t *testing.T) netip.AddrPort {
		return netip.MustParseAddrPort(testnet.ClosedAddr(t))
	}},
	{name: "accepts and never answers", wantErr: "no ServerHello within the timeout (300ms)", addr: func(t *testing.T) netip.AddrPort {
		return probeServer(t, func(c net.Conn) { c.SetDeadline(time.Now().Add(10 * time.Second)); io.Copy(io.Discard, c) })
	}},
}

// TestAnswerCheckHandshake: the check passes only on a ServerHello for
// the routed name; a route that requires node identity passes too.
func TestAnswerCheckHandshake(t *testing.T) {
	for _, tc := range handshakeCases {
		t.Run(tc.name, func(t *testing.T) {
			ap := tc.addr(t)
			c, err := NewAnswerCheck(AnswerCheckConfig{Answer: []netip.Addr{ap.Addr()}, Port: int(ap.Port()),
				ServerName: checkName, Interval: time.Second, Timeout: 300 * time.Millisecond, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), c.cfg.Timeout)
			defer cancel()
			err = c.handshake(ctx, ap)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("check failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("check error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestCheckOffersItsProtocol: the ClientHello offers CheckALPN (after h2
// and http/1.1), by which the gateways checked log the check apart.
func TestCheckOffersItsProtocol(t *testing.T) {
	offered := make(chan []string, 1)
	ap := probeServer(t, tlsServing(t, func(c *tls.Config) {
		c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			offered <- hello.SupportedProtos
			return nil, nil
		}
	}))
	c, err := NewAnswerCheck(AnswerCheckConfig{Answer: []netip.Addr{ap.Addr()}, Port: int(ap.Port()),
		ServerName: checkName, Interval: 10 * time.Second, Timeout: 5 * time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), c.cfg.Timeout)
	defer cancel()
	if err := c.handshake(ctx, ap); err != nil {
		t.Fatalf("check: %v", err)
	}
	if got := <-offered; !slices.Equal(got, []string{"h2", "http/1.1", CheckALPN}) {
		t.Errorf("ALPN offered %q, want h2, http/1.1, %s", got, CheckALPN)
	}
}

// TestCheckServerName: a wildcard is checked with a name it routes.
func TestCheckServerName(t *testing.T) {
	tests := []struct{ name, pattern, want string }{
		{name: "exact", pattern: "registry.example.com", want: "registry.example.com"},
		{name: "wildcard", pattern: "*.registry.example.com", want: "snigate-answer-check.registry.example.com"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckServerName(tc.pattern)
			if got != tc.want {
				t.Errorf("CheckServerName(%q) = %q, want %q", tc.pattern, got, tc.want)
			}
			var routed = testNames(t, tc.pattern)
			if _, ok := routed.Lookup(got); !ok {
				t.Errorf("%q is not routed by %q", got, tc.pattern)
			}
		})
	}
}
