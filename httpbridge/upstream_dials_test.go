package httpbridge

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestUpstreamDialBurstBounded: a burst of node requests that finds the
// HTTP/1.1 pool empty, against a registry slow to finish handshakes,
// opens at most the bound's upstream connections at once; the other
// requests wait for a slot, and every request, the burst's and a
// legitimate node's arriving later, is answered once the registry goes
// on. Before the bound, each request of the burst dialled at once: as
// many mTLS handshakes at the registry as requests in flight.
func TestUpstreamDialBurstBounded(t *testing.T) {
	const limit, burst = 4, 12
	p := newTestPKI(t)
	var held atomic.Int32
	arrived, gate := make(chan struct{}, burst), make(chan struct{})
	cfg := p.upstreamTLS("h2", "http/1.1")
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		held.Add(1)
		arrived <- struct{}{}
		<-gate
		held.Add(-1)
		return nil, nil
	}
	up := startUpstreamWith(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), nil)
	t.Cleanup(func() { closeOnce(gate) })
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
	waiting := make(chan struct{}, burst)
	w.bridge.client.dials = newDialSlots(limit)
	w.bridge.client.dials.waitFunc = func() { waiting <- struct{}{} }

	attacker := w.node(t, "h2")
	answers := make([]<-chan *http.Response, burst)
	for i := range answers {
		answers[i] = getAsync(attacker, fmt.Sprintf("/v2/team/app/manifests/burst%d", i))
	}
	for arrivals, waits := 0, 0; arrivals < limit || waits < burst-limit; {
		select {
		case <-arrived:
			if arrivals++; arrivals > limit {
				t.Fatalf("%d upstream handshakes in progress at once, want at most %d", held.Load(), limit)
			}
		case <-waiting:
			waits++
		case <-time.After(waitLimit):
			t.Fatalf("%d handshakes at the registry, %d dials waiting; want %d and %d", arrivals, waits, limit, burst-limit)
		}
	}
	if n := held.Load(); n != limit {
		t.Fatalf("%d handshakes in progress with %d dials waiting, want %d", n, burst-limit, limit)
	}
	closeOnce(gate)
	for i, ch := range answers {
		if resp := <-ch; resp == nil || resp.StatusCode != http.StatusOK {
			t.Errorf("burst request %d: %v, want 200", i, resp)
		}
	}
	if resp, body := do(t, w.node(t, "http/1.1"), "GET", "/v2/", nil); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("a legitimate node after the burst: %d %q", resp.StatusCode, body)
	}
	if c := w.pool.Candidates(); len(c) != 1 {
		t.Error("the upstream was reported down for dials that waited")
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
