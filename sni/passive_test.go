package sni

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snigate/snigate/upstream"
)

// TestBlackHoleDoesNotEatTheRetry is the regression test of a black-holed
// upstream: one deadline covered every attempt, so an upstream that
// accepts TCP and never speaks TLS used the whole timeouts.connect and the
// promised retry on the next upstream never happened (2 of 6 requests
// failed at 5.00 s). Now each attempt gets its share of the time left:
// every request succeeds through the second upstream; health.fall failed
// connections mark the black hole down passively; the route's tcp check,
// which the black hole passes, does not bring it back (its recovery check
// is a TLS handshake), and once it speaks TLS again it comes back by the
// active checks.
func TestBlackHoleDoesNotEatTheRetry(t *testing.T) {
	const requests, fall, rise = 6, 3, 2
	p := newBridgePKI(t)
	good := newTLSUpstream(t, p.upstreamConfig())
	var speaks atomic.Bool
	hole := newBlackHole(t, p, &speaks)
	pool := tcpCheckedPool(t, p, upstream.Check{Kind: upstream.CheckTCP, Fall: fall, Rise: rise, Timeout: 300 * time.Millisecond},
		hole.addr, good.addr)
	r := p.route(t, good.addr) // its pool replaced by one whose first upstream is the black hole
	r.Pool = pool
	w := newWorld(t, Config{ConnectTimeout: time.Second}, "", r)

	for i := range requests {
		if _, err := ping(t, w, p.nodeConfig()); err != nil {
			t.Fatalf("request %d of %d with a black-holed first upstream: %v", i+1, requests, err)
		}
	}
	if got := w.counter(t, w.m.dialFailures, "registry", hole.addr); got != fall {
		t.Errorf("dial failures of the black hole = %v, want %d (then it is no candidate)", got, fall)
	}
	status := func() upstream.Status { return hostStatus(t, pool, hole.addr) }
	if st := status(); st.Healthy {
		t.Fatalf("the black hole is still up after %d failed connections", fall)
	}
	for range rise {
		pool.CheckOnce(context.Background())
	}
	if st := status(); st.Healthy {
		t.Fatal("the tcp check brought the black hole back up")
	}

	speaks.Store(true)
	for range rise {
		pool.CheckOnce(context.Background())
	}
	if st := status(); !st.Healthy {
		t.Fatalf("the recovered upstream is still down after %d checks: %s", rise, st.LastError)
	}
	for range 2 {
		if _, err := ping(t, w, p.nodeConfig()); err != nil {
			t.Fatalf("request after the recovery: %v", err)
		}
	}
	w.logs.wait(t, "msg=connection", "upstream="+hole.addr, "result=ok")
}

// newBlackHole is an upstream that accepts TCP and never answers, until
// speaks is set: then it is a TLS echo upstream.
func newBlackHole(t *testing.T, p *bridgePKI, speaks *atomic.Bool) *tcpUpstream {
	return newTCPUpstream(t, func(c *net.TCPConn) {
		if !speaks.Load() {
			io.Copy(io.Discard, c) // accepts, reads, never answers
			return
		}
		tc := tls.Server(c, p.upstreamConfig())
		if tc.Handshake() == nil {
			io.Copy(tc, tc)
		}
	})
}

// tcpCheckedPool is the registry route's pool of addrs with check, its
// connections made with the edge certificate.
func tcpCheckedPool(t *testing.T, p *bridgePKI, check upstream.Check, addrs ...string) *upstream.Pool {
	upTLS := &tls.Config{RootCAs: p.upstreamCA.pool, Certificates: []tls.Certificate{p.edgeCert}}
	pool, err := upstream.New(upstream.Config{
		Route: "registry", Addrs: addrs, Check: check,
		TLSConfigFunc: func() *tls.Config {
			c := upTLS.Clone()
			c.ServerName = registryName
			return c
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// hostStatus is pool's status of addr.
func hostStatus(t *testing.T, pool *upstream.Pool, addr string) upstream.Status {
	t.Helper()
	for _, st := range pool.Status() {
		if st.Upstream == addr {
			return st
		}
	}
	t.Fatalf("no status for %s", addr)
	return upstream.Status{}
}

// TestClientCausedFailuresDoNotCount: failures that the client's own
// offer may cause (the name the upstream's certificate is checked
// against, its ALPN list) do not take an upstream down; the upstream's
// own failures do.
func TestClientCausedFailuresDoNotCount(t *testing.T) {
	remote := func(msg string) error { return &net.OpError{Op: "remote error", Err: errors.New("tls: " + msg)} }
	tests := []struct {
		name   string
		err    error
		client bool
	}{
		{name: "certificate not for the client's name", err: fmt.Errorf("TLS handshake: %w", x509.HostnameError{Host: "x.registry.example.com", Certificate: &x509.Certificate{}}), client: true},
		{name: "no common ALPN", err: fmt.Errorf("TLS handshake: %w", remote("no application protocol")), client: true},
		{name: "unknown name", err: remote("unrecognized name"), client: true},
		{name: "expired certificate", err: x509.CertificateInvalidError{Cert: &x509.Certificate{}, Reason: x509.Expired}},
		{name: "unknown authority", err: x509.UnknownAuthorityError{}},
		{name: "refused client certificate", err: remote("bad certificate")},
		{name: "black hole", err: fmt.Errorf("TLS handshake: %w", context.DeadlineExceeded)},
		{name: "refused", err: errors.New("connect: connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clientCaused(tt.err); got != tt.client {
				t.Errorf("clientCaused(%v) = %v, want %v", tt.err, got, tt.client)
			}
		})
	}
}
