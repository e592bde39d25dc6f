package dnsresponder

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// TestWildcardSource: on a socket bound to a wildcard address, every kind
// of reply (fast path, slow path on the reading goroutine, forwarded on
// its own goroutine, FORMERR) leaves from the address the query was sent
// to. The client's socket is connected to that address, so a reply from
// any other one never reaches it and the exchange times out.
func TestWildcardSource(t *testing.T) {
	up := newUpstream(t, answerA(forwardedA))
	for _, tc := range []struct {
		bind, ask string
		noBatch   bool
	}{
		{"0.0.0.0", "127.0.0.2", false},
		{"0.0.0.0", "127.0.0.2", true},
		{"::", "127.0.0.3", false}, // dual-stack socket, IPv4 client
		{"::", "127.0.0.3", true},
		{"::", "::1", false},
		{"::", "::1", true},
	} {
		t.Run(fmt.Sprintf("%s/%s/noBatch=%v", tc.bind, tc.ask, tc.noBatch), func(t *testing.T) {
			w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Forward: []string{up.addr}}, tc.bind,
				func(s *Server) { s.noBatch = tc.noBatch })
			_, port, _ := net.SplitHostPort(w.addr)
			addr := net.JoinHostPort(tc.ask, port)
			if r := query(t, "udp", addr, exactName, dns.TypeA, 0); len(r.Answer) != 1 {
				t.Errorf("routed name (fast path): %v", r)
			}
			if r := query(t, "udp", addr, "example.org.", dns.TypeA, 0); len(r.Answer) != 1 {
				t.Errorf("forwarded name: %v", r)
			}
			m := new(dns.Msg)
			m.SetQuestion(exactName, dns.TypeA)
			m.Opcode = dns.OpcodeNotify
			if r := exchange(t, "udp", addr, m); r.Rcode != dns.RcodeNotImplemented {
				t.Errorf("NOTIFY (slow path): %v", r)
			}
			c, err := net.Dial("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write(append(header(0x4242, 0, 1, 0, 0, 0), 0xff, 0xff))
			buf := make([]byte, 512)
			if n, err := c.Read(buf); err != nil || n < headerLen || buf[0] != 0x42 || buf[3]&0xf != dns.RcodeFormatError {
				t.Errorf("garbage after a header: read % x, %v; want FORMERR", buf[:max(n, 0)], err)
			}
		})
	}
}

// TestOverloadDrops: beyond maxInFlight queries waiting on forwarders, a
// forwarded query is dropped and counted, while routed names are still
// answered; the waiting one is answered once its forwarder is.
func TestOverloadDrops(t *testing.T) {
	in, release := make(chan struct{}, 1), make(chan struct{})
	up := newUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		in <- struct{}{}
		<-release
		answerA(forwardedA)(w, r)
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	m := NewMetrics(prometheus.NewPedanticRegistry())
	h, err := New(Config{Names: testNames(t), Answer: testAnswer(), Forward: []string{up.addr},
		Metrics: m, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	pc := serveOneSlot(t, h, unblock)

	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	send := func(id uint16, name string) { t.Helper(); sendA(t, c, id, name) }
	recv := func() uint16 { t.Helper(); return recvID(t, c) }
	send(1, "one.example.org.")
	<-in // the only slot is taken
	send(2, "two.example.org.")
	send(3, exactName)
	if id := recv(); id != 3 {
		t.Fatalf("first reply has ID %d, want 3 (the routed name; 2 dropped)", id)
	}
	if got := counterValue(t, m, "A", ResultDropped); got != 1 {
		t.Errorf("dropped queries counted %v, want 1", got)
	}
	unblock()
	if id := recv(); id != 1 {
		t.Errorf("reply has ID %d, want 1 (the forwarded query)", id)
	}
}

// serveOneSlot serves h on UDP with one reader and one query in flight,
// until the test ends: then it calls unblock and shuts the server down.
func serveOneSlot(t *testing.T, h *Handler, unblock func()) net.PacketConn {
	t.Helper()
	s := NewServer(h, discardLogger())
	s.udpReaders, s.maxInFlight = 1, 1 // one reader: the queries are handled in order
	pc, ln := listenPair(t, "127.0.0.1")
	ln.Close()
	started := make(chan net.Addr, 1)
	s.NotifyStartedFunc = func(a net.Addr) { started <- a }
	var wg sync.WaitGroup
	wg.Go(func() { s.ServeUDP(pc) })
	t.Cleanup(func() {
		unblock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		wg.Wait()
	})
	<-started
	return pc
}

// sendA sends an A query for name with id on c.
func sendA(t *testing.T, c net.Conn, id uint16, name string) {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	q.Id = id
	b, _ := q.Pack()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// recvID reads a reply on c and returns its ID.
func recvID(t *testing.T, c net.Conn) uint16 {
	t.Helper()
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil || n < headerLen {
		t.Fatalf("read reply: %v", err)
	}
	return uint16(buf[0])<<8 | uint16(buf[1])
}

// TestBatchMixed: a burst of queries, read in batches, mixing the fast
// path, forwarded queries and FORMERR, gets one reply per query, each
// with its query's ID and the right kind of answer.
func TestBatchMixed(t *testing.T) {
	up := newUpstream(t, answerA(forwardedA))
	for _, noBatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("noBatch=%v", noBatch), func(t *testing.T) {
			w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Forward: []string{up.addr}}, "",
				func(s *Server) { s.noBatch = noBatch })
			c, err := net.Dial("udp", w.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const n = 96
			want := make(map[uint16]int, n) // ID -> rcode*10 + answers
			for i := range uint16(n) {
				var b []byte
				switch i % 3 {
				case 0:
					b = packed(t, i, func(m *dns.Msg) { m.Question[0].Name = "example.org." })
					want[i] = 1
				case 1:
					b = append(header(i, 0, 1, 0, 0, 0), 0xff, 0xff)
					want[i] = dns.RcodeFormatError * 10
				default:
					b = packed(t, i, func(*dns.Msg) {})
					want[i] = 1
				}
				if _, err := c.Write(b); err != nil {
					t.Fatal(err)
				}
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 1500)
			for len(want) > 0 {
				k, err := c.Read(buf)
				if err != nil {
					t.Fatalf("%d replies missing: %v", len(want), err)
				}
				r := new(dns.Msg)
				if err := r.Unpack(buf[:k]); err != nil {
					t.Fatalf("reply does not unpack: %v", err)
				}
				got, ok := want[r.Id]
				if !ok {
					t.Fatalf("unexpected or second reply with ID %d", r.Id)
				}
				if r.Rcode*10+len(r.Answer) != got {
					t.Errorf("ID %d: rcode %d, %d answers; want %d", r.Id, r.Rcode, len(r.Answer), got)
				}
				delete(want, r.Id)
			}
		})
	}
}
