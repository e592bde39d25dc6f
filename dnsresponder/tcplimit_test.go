package dnsresponder

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTCPConnectionLimit: connections beyond MaxTCPConns are closed at
// once, counted and logged; those within it are served; a freed slot is
// used again.
func TestTCPConnectionLimit(t *testing.T) {
	m := NewMetrics(nil)
	logs := &logRecorder{}
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Metrics: m, Logger: slogFor(logs)}, "",
		func(s *Server) { s.MaxTCPConns = 2 })
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// Both held connections are served (a query on each proves the server
	// accepted them before the third arrives).
	for _, c := range held {
		askOn(t, c)
	}
	extra, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection over the limit: read %d, %v; want it closed at once (EOF)", n, err)
	}
	if got := testutil.ToFloat64(m.tcpRefusedConns); got != 1 {
		t.Errorf("snigate_dns_tcp_connections_refused_total = %v, want 1", got)
	}
	if logs.count("dns: TCP connection refused: 2 open") != 1 || logs.count("result=tcp_refused") != 1 {
		t.Errorf("want one log line for the refused connection, got %q", logs.msgs)
	}
	// Free both slots; a new client gets in (the server notices the close
	// on its read, so allow it that moment).
	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		ok := tryAskOn(c)
		c.Close()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no TCP connection served after the held ones closed")
		}
	}
	// UDP never had a limit.
	if r := query(t, "udp", w.addr, exactName, dns.TypeA, 0); r.Rcode != dns.RcodeSuccess {
		t.Errorf("UDP query: rcode %d", r.Rcode)
	}
}

func askOn(t *testing.T, c net.Conn) {
	t.Helper()
	if !tryAskOn(c) {
		t.Fatal("a TCP connection within the limit was not served")
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
