package dnsresponder

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestSetHandler(t *testing.T) {
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer()}, "")
	ask := func() *dns.Msg { return query(t, "udp", w.addr, exactName, dns.TypeA, 0) }
	sameRRs(t, "answer before reload", ask().Answer, []string{exactName + " 30 IN A " + answer4})

	h2, err := New(Config{Names: testNames(t), Answer: []netip.Addr{netip.MustParseAddr("192.0.2.99")}, TTL: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.server.SetHandler(h2)
	sameRRs(t, "answer after reload", ask().Answer, []string{exactName + " 60 IN A 192.0.2.99"})

	w.server.SetHandler(nil)
	if r := ask(); r.Rcode != dns.RcodeRefused {
		t.Errorf("nil handler: rcode %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}
}

func TestServeAfterShutdown(t *testing.T) {
	s := NewServer(nil, discardLogger())
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	pc, ln := listenPair(t, "127.0.0.1")
	if err := s.ServeUDP(pc); !errors.Is(err, ErrServerClosed) {
		t.Errorf("ServeUDP after Shutdown: %v, want ErrServerClosed", err)
	}
	if err := s.ServeTCP(ln); !errors.Is(err, ErrServerClosed) {
		t.Errorf("ServeTCP after Shutdown: %v, want ErrServerClosed", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("listener still open")
	}
	if _, _, err := pc.ReadFrom(make([]byte, 1)); err == nil {
		t.Error("packet conn still open")
	}
}

// TestShutdownRacingServe: a Shutdown that comes before or while Serve
// starts must still stop it (regression guard: miekg/dns ignores a
// shutdown of a server that has not started).
func TestShutdownRacingServe(t *testing.T) {
	for range 50 {
		s := NewServer(nil, discardLogger())
		pc, ln := listenPair(t, "127.0.0.1")
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		wg.Go(func() { errs <- s.ServeUDP(pc) })
		wg.Go(func() { errs <- s.ServeTCP(ln) })
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		wg.Wait() // hangs (and the test times out) if a Serve missed the Shutdown
		cancel()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve: %v, want nil or ErrServerClosed", err)
			}
		}
	}
}

// blocking answers once release is closed, after telling in.
type blocking struct {
	in      chan struct{}
	release chan struct{}
}

func (b *blocking) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	b.in <- struct{}{}
	<-b.release
	m := new(dns.Msg)
	m.SetRcode(r, dns.RcodeRefused)
	w.WriteMsg(m)
}

func TestShutdownWaitsForQueries(t *testing.T) {
	b := &blocking{in: make(chan struct{}, 1), release: make(chan struct{})}
	s := NewServer(b, discardLogger())
	started := make(chan net.Addr, 2)
	s.NotifyStartedFunc = func(a net.Addr) { started <- a }
	pc, ln := listenPair(t, "127.0.0.1")
	var wg sync.WaitGroup
	wg.Go(func() { s.ServeUDP(pc) })
	wg.Go(func() { s.ServeTCP(ln) })
	defer wg.Wait()
	got := map[string]bool{}
	for range 2 {
		a := <-started
		got[a.Network()+" "+a.String()] = true
	}
	if !got["udp "+pc.LocalAddr().String()] || !got["tcp "+ln.Addr().String()] {
		t.Errorf("NotifyStartedFunc got %v", got)
	}
	idle, err := net.Dial("tcp", ln.Addr().String()) // an idle TCP client must not hold Shutdown
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	replies := make(chan *dns.Msg, 1)
	wg.Go(func() {
		m := new(dns.Msg)
		m.SetQuestion(exactName, dns.TypeA)
		r, _, _ := (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, pc.LocalAddr().String())
		replies <- r
	})
	<-b.in
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(t.Context()) }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a query in flight", err)
	default:
	}
	close(b.release)
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if r := <-replies; r == nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("query in flight during Shutdown got %v, want its reply", r)
	}
}

func TestShutdownDeadline(t *testing.T) {
	b := &blocking{in: make(chan struct{}, 1), release: make(chan struct{})}
	s := NewServer(b, discardLogger())
	pc, ln := listenPair(t, "127.0.0.1")
	ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.ServeUDP(pc) })
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(goodQuery(t))
	<-b.in
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with a query in flight and a done ctx: %v, want context.Canceled", err)
	}
	close(b.release)
}
