package dnsresponder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/snigate/snigate/internal/testkit"
)

// busyHandler holds every query until release is closed, telling started
// about each one; TCPRefused and TCPEvicted count as Handler's do.
type busyHandler struct {
	*Handler
	started chan struct{}
	release chan struct{}
}

func (b *busyHandler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	b.started <- struct{}{}
	<-b.release
	b.Handler.ServeDNS(w, req)
}

// closedSignal makes the server report every TCP connection leaving its
// limit's set on the returned channel.
func closedSignal(s *Server) chan struct{} {
	ch := make(chan struct{}, 1024)
	s.tcpClosedFunc = func() { ch <- struct{}{} }
	return ch
}

// TestTCPConnectionLimit: when MaxTCPConns are open and every one is busy
// answering, one more is closed at once, counted and logged; those within
// the limit are answered; a freed slot is used again.
func TestTCPConnectionLimit(t *testing.T) {
	m := NewMetrics(nil)
	logs := testkit.NewLogSink()
	cfg := Config{Names: testNames(t), Answer: testAnswer(), Metrics: m, Logger: logs.Logger()}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	busy := &busyHandler{Handler: h, started: make(chan struct{}, 2), release: make(chan struct{})}
	var closed chan struct{}
	w := serveWorld(t, h, cfg.Logger, "", func(s *Server) {
		s.MaxTCPConns = 2
		s.SetHandler(busy)
		closed = closedSignal(s)
	})
	releaseOnce := sync.OnceFunc(func() { close(busy.release) })
	t.Cleanup(releaseOnce)
	held := make([]net.Conn, 2)
	for i := range held {
		held[i] = dialFrom(t, insideIP, w.addr)
		sendQuery(t, held[i], exactName)
		<-busy.started // the server is answering it: not idle
	}
	extra := dialFrom(t, insideIP, w.addr)
	if err := readEOF(extra); err != nil {
		t.Fatalf("connection over the limit, all others busy: %v; want it closed at once", err)
	}
	if got := testutil.ToFloat64(m.tcpRefusedConns); got != 1 {
		t.Errorf("snigate_dns_tcp_connections_refused_total = %v, want 1", got)
	}
	if len(logs.Lines("dns: TCP connection refused: 2 open")) != 1 || len(logs.Lines("result=tcp_refused")) != 1 {
		t.Errorf("want one log line for the refused connection, got %q", logs.Lines())
	}
	releaseOnce()
	for _, c := range held {
		if !readAnswer(c) {
			t.Fatal("a held connection within the limit was not answered")
		}
		c.Close()
		<-closed
	}
	c := dialFrom(t, insideIP, w.addr)
	askOn(t, c)
	// UDP never had a limit.
	if r := query(t, "udp", w.addr, exactName, dns.TypeA, 0); r.Rcode != dns.RcodeSuccess {
		t.Errorf("UDP query: rcode %d", r.Rcode)
	}
}

// TestIdleTCPConnectionsDoNotLockOutOthers: 256 idle DNS-over-TCP
// connections from one client used to refuse every other client's TCP
// query (the limit was full). Now, with the per-client limit lifted to
// show the pool's own defence, the new client is answered: the
// connection idle longest is closed to admit it (or, had the test been
// slow, the idle ones had already timed out, crowded, after
// CrowdedTCPIdleTimeout).
func TestIdleTCPConnectionsDoNotLockOutOthers(t *testing.T) {
	m := NewMetrics(nil)
	var closed chan struct{}
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Metrics: m}, "", func(s *Server) {
		s.MaxTCPConnsPerClient = -1
		closed = closedSignal(s)
	})
	idle := make([]net.Conn, DefaultMaxTCPConns)
	for i := range idle {
		idle[i] = dialFrom(t, outsideIP, w.addr)
		askOn(t, idle[i]) // admitted, answered, now idle
	}
	c := dialFrom(t, insideIP, w.addr)
	askOn(t, c)
	evicted := testutil.ToFloat64(m.tcpEvictedConns)
	if refused := testutil.ToFloat64(m.tcpRefusedConns); refused != 0 {
		t.Errorf("snigate_dns_tcp_connections_refused_total = %v, want 0", refused)
	}
	if evicted != 1 && len(closed) == 0 {
		t.Errorf("snigate_dns_tcp_connections_evicted_total = %v and none timed out; want 1", evicted)
	}
	if err := readEOF(idle[0]); err != nil {
		t.Errorf("the connection idle longest: %v; want it closed", err)
	}
}

// TestTCPPerClientLimit: one client address holds at most
// DefaultMaxTCPConnsPerClient connections; of 256 from one client the
// rest are closed at once (counted, one log line), other clients are
// answered, and a connection the client closes frees its place.
func TestTCPPerClientLimit(t *testing.T) {
	m := NewMetrics(nil)
	logs := testkit.NewLogSink()
	var closed chan struct{}
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Metrics: m, Logger: logs.Logger()}, "",
		func(s *Server) { closed = closedSignal(s) })
	var held []net.Conn
	for range DefaultMaxTCPConnsPerClient {
		c := dialFrom(t, outsideIP, w.addr)
		askOn(t, c)
		held = append(held, c)
	}
	const attempts = 256
	for i := DefaultMaxTCPConnsPerClient; i < attempts; i++ {
		if err := readEOF(dialFrom(t, outsideIP, w.addr)); err != nil {
			t.Fatalf("connection %d from one client: %v; want it closed at once", i+1, err)
		}
	}
	if got, want := testutil.ToFloat64(m.tcpRefusedConns), float64(attempts-DefaultMaxTCPConnsPerClient); got != want {
		t.Errorf("snigate_dns_tcp_connections_refused_total = %v, want %v", got, want)
	}
	if n := len(logs.Lines("dns: TCP connection refused: 16 open from this client")); n != 1 {
		t.Errorf("%d per-client refusal lines, want 1 (rate-limited): %q", n, logs.Lines())
	}
	askOn(t, dialFrom(t, insideIP, w.addr))
	held[0].Close()
	<-closed
	askOn(t, dialFrom(t, outsideIP, w.addr))
}

// TestCrowdedTCPIdleTimeout: while more than three quarters of
// MaxTCPConns are open, idle connections (those already waiting, and the
// newcomer) are closed after CrowdedTCPIdleTimeout instead of 8s.
func TestCrowdedTCPIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := New(Config{Names: testNames(t), Answer: testAnswer(), Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		s := NewServer(h, discardLogger())
		s.MaxTCPConns = 4 // crowded with 4 open
		var closed atomic.Int64
		s.tcpClosedFunc = func() { closed.Add(1) }
		ln := newPipeListener()
		served := make(chan error, 1)
		go func() { served <- s.ServeTCP(ln) }()
		var clients []net.Conn
		for i := range 3 {
			c := ln.dial(i)
			askOn(t, c) // now idle, for 8s
			clients = append(clients, c)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := closed.Load(); n != 0 {
			t.Fatalf("%d of 3 idle connections closed after 5s, not crowded; want none (8s idle)", n)
		}
		clients = append(clients, ln.dial(3)) // 4 open: crowded
		synctest.Wait()
		time.Sleep(CrowdedTCPIdleTimeout + time.Millisecond)
		synctest.Wait()
		if n := closed.Load(); n != 4 {
			t.Errorf("%d of 4 idle connections closed %v after the pool got crowded, want 4", n, CrowdedTCPIdleTimeout)
		}
		for _, c := range clients {
			c.Close()
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-served; err != nil {
			t.Fatal(err)
		}
	})
}

// pipeListener hands out the server ends of net.Pipe connections, for
// tests in a synctest bubble (whose clock their deadlines follow).
type pipeListener struct {
	conns  chan net.Conn
	done   chan struct{}
	closer sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// dial connects a client as 127.0.0.2, port 1000+i, and returns its end.
func (l *pipeListener) dial(i int) net.Conn {
	server, client := net.Pipe()
	l.conns <- &pipeConn{Conn: server, remote: &net.TCPAddr{IP: net.ParseIP(outsideIP), Port: 1000 + i}}
	return client
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closer.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.ParseIP(insideIP), Port: 53} }

// pipeConn is a pipe end with a TCP client address.
type pipeConn struct {
	net.Conn
	remote net.Addr
}

func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

// dialFrom opens a TCP connection to addr from the local address from.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readEOF reports how c's next read ends: nil when the server closed it
// (EOF or a reset), an error when it read data or was still open after 5s.
func readEOF(c net.Conn) error {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case err == nil:
		return fmt.Errorf("read %d bytes, want the connection closed", n)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("still open after 5s: %w", err)
	case err == io.EOF:
	}
	return nil
}

func askOn(t *testing.T, c net.Conn) {
	t.Helper()
	if !tryAskOn(c) {
		t.Fatal("a TCP connection within the limits was not answered")
	}
}

// tryAskOn sends one query over the TCP connection c and reports whether
// an answer came back.
func tryAskOn(c net.Conn) bool {
	m := new(dns.Msg)
	m.SetQuestion(exactName, dns.TypeA)
	dc := &dns.Conn{Conn: c}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := dc.WriteMsg(m); err != nil {
		return false
	}
	r, err := dc.ReadMsg()
	return err == nil && r.Id == m.Id && r.Rcode == dns.RcodeSuccess
}

// sendQuery writes a query for name on c without waiting for the answer.
func sendQuery(t *testing.T, c net.Conn, name string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := (&dns.Conn{Conn: c}).WriteMsg(m); err != nil {
		t.Fatal(err)
	}
}

// readAnswer reads one reply on c and reports whether it is NOERROR.
func readAnswer(c net.Conn) bool {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r, err := (&dns.Conn{Conn: c}).ReadMsg()
	return err == nil && r.Rcode == dns.RcodeSuccess
}
