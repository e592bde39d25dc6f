package sni

import (
	"context"
	"crypto/tls"
	"errors"
	"github.com/snigate/snigate/internal/testkit"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
)

func TestDialSlots(t *testing.T) {
	a, b, c := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3")
	tests := []struct {
		name      string
		max, per  int
		held      []netip.Addr // slots taken first
		try       netip.Addr
		wantLimit bool
	}{
		{name: "free", max: 2, per: 1, try: a},
		{name: "client at its bound", max: 4, per: 1, held: []netip.Addr{a}, try: a, wantLimit: true},
		{name: "another client", max: 4, per: 1, held: []netip.Addr{a}, try: b},
		{name: "route at its bound", max: 2, per: 1, held: []netip.Addr{a, b}, try: c, wantLimit: true},
		{name: "no bounds", max: -1, per: -1, held: []netip.Addr{a, a, a}, try: a},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &dialSlots{max: tt.max, perClient: tt.per, wait: DialQueueWait}
				for _, h := range tt.held {
					if _, err := d.acquire(context.Background(), h); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				_, err := d.acquire(context.Background(), tt.try)
				if got := errors.Is(err, errDialLimit); got != tt.wantLimit {
					t.Fatalf("acquire: %v, want the dial limit: %v", err, tt.wantLimit)
				}
				if waited := time.Since(start); tt.wantLimit && waited != DialQueueWait {
					t.Errorf("refused after %v, want after DialQueueWait %v", waited, DialQueueWait)
				}
			})
		})
	}
}

// A dial over the bound waits for a slot and proceeds as soon as one
// frees.
func TestDialSlotsWaitForAFreeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := netip.MustParseAddr("192.0.2.1")
		d := &dialSlots{max: 1, perClient: 1, wait: DialQueueWait}
		give, err := d.acquire(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			g, err := d.acquire(context.Background(), src)
			if err == nil {
				g()
			}
			got <- err
		}()
		synctest.Wait() // the second dial waits
		time.Sleep(DialQueueWait / 2)
		give()
		if err := <-got; err != nil {
			t.Fatalf("a dial waiting when a slot freed: %v", err)
		}
		if d.total != 0 || len(d.bySource) != 0 {
			t.Errorf("after both released: %d in progress, %v by source", d.total, d.bySource)
		}
	})
}

// Regression (issue 14 item 2): nothing bounded the upstream dials in
// progress, so 150 stalled hellos held 150 registry connections. A
// client over max_dials_per_client, and any client over the route's
// max_dials, is refused (result dial_limit) after a short wait; the dials
// in progress are a gauge, and another client still gets its dial. The
// dials start once the nodes' handshakes are done (issue 26 item 6).
func TestBridgeDialBounds(t *testing.T) {
	p := newBridgePKI(t)
	hole := newTCPUpstream(t, func(c *net.TCPConn) { readAll(t, c) }) // accepts TCP, never speaks TLS
	r := p.route(t, hole.addr)
	r.MaxDials, r.MaxDialsPerClient, r.dialWait = 2, 1, 10*time.Millisecond
	r.alpn.learn(hole.addr, []string{"h2"}, "h2") // warm: no dial during the handshakes
	w := newWorld(t, Config{ConnectTimeout: 2 * waitLimit}, "", r)
	connect := func(local string) *tls.Conn {
		tc := tls.Client(w.dialFrom(t, local), p.nodeConfig("h2"))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("node handshake from %s: %v", local, err)
		}
		return tc
	}
	wantRefused := func(c *tls.Conn, n float64) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(waitLimit))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("over the bound: read %v, want the connection closed", err)
		}
		testkit.Poll(t, "the refusal counted", func() bool { return w.result(t, "registry", resultDialLimit) == n })
	}

	connect("127.0.0.1")
	testkit.Poll(t, "one dial in progress", func() bool { return w.dialsInProgress(t, "registry") == 1 })
	wantRefused(connect("127.0.0.1"), 1) // same client: max_dials_per_client 1
	connect("127.0.0.2")
	testkit.Poll(t, "another client's dial in progress", func() bool { return w.dialsInProgress(t, "registry") == 2 })
	wantRefused(connect("127.0.0.3"), 2) // a third client: max_dials 2
	w.logs.wait(t, "msg=connection", "result=dial_limit", "max_dials_per_client 1")
	w.srv.Close()
	if n := w.dialsInProgress(t, "registry"); n != 0 {
		t.Errorf("%v dials in progress after Close, want 0", n)
	}
}
