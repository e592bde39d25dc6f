package dnsresponder

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestAdoptKeepsForwarderHealth: a reload's handler keeps the state of
// the forwarders it shares with the old one, and the series of the ones
// it dropped disappear.
func TestAdoptKeepsForwarderHealth(t *testing.T) {
	m := NewMetrics(nil)
	old, err := New(Config{Forward: []string{"127.0.0.1:5301", "127.0.0.1:5302"}, Metrics: m, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	of := old.fwd.(*forwarders).list
	retry := time.Now().Add(time.Minute).UnixNano()
	of[0].failing.Store(true)
	of[0].retryAt.Store(retry)
	m.setUpstreamUp(of[0].addr, false)
	m.upstream(of[1].addr, upstreamOK)

	cur, err := New(Config{Forward: []string{"127.0.0.1:5301", "127.0.0.1:5303"}, Metrics: m, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cur.Adopt(old)
	cf := cur.fwd.(*forwarders).list
	if !cf[0].failing.Load() || cf[0].retryAt.Load() != retry {
		t.Errorf("127.0.0.1:5301 failing=%v retryAt=%d, want the old state (true, %d)", cf[0].failing.Load(), cf[0].retryAt.Load(), retry)
	}
	if cf[1].failing.Load() {
		t.Error("a new forwarder starts failing")
	}
	if got := testutil.ToFloat64(m.upstreamUp.WithLabelValues("127.0.0.1:5301")); got != 0 {
		t.Errorf("up{5301} = %v, want 0 (still failing)", got)
	}
	if got := testutil.ToFloat64(m.upstreamUp.WithLabelValues("127.0.0.1:5303")); got != 1 {
		t.Errorf("up{5303} = %v, want 1", got)
	}
	// 5302 is gone from the configuration: no series of it is left
	// (checked before WithLabelValues above could have made one).
	if m.upstreamRequests.DeleteLabelValues("127.0.0.1:5302", upstreamOK) {
		t.Error("an upstream_requests series of 5302 is left, want it gone with 5302")
	}
	// The kept and the new forwarder have theirs, at 0 for every result.
	if n, want := testutil.CollectAndCount(m.upstreamRequests), 2*len(upstreamResults); n != want {
		t.Errorf("%d upstream_requests series, want %d (5301 and 5303, each result)", n, want)
	}
	if n := testutil.CollectAndCount(m.upstreamUp); n != 2 {
		t.Errorf("%d upstream_up series, want 2 (5301, 5303)", n)
	}

	// Without forwarders any more: every old series goes.
	none, _ := New(Config{Metrics: m, Logger: discardLogger()})
	none.Adopt(cur)
	if n := testutil.CollectAndCount(m.upstreamUp); n != 0 {
		t.Errorf("%d upstream_up series after forwarding was turned off, want 0", n)
	}
	none.Adopt(nil) // the first generation has no predecessor
}
