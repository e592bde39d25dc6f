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

// TestHTTP1BurstRidesOnFreedConnections: requests of a burst that wait
// for a dial slot take the connection another request gives back rather
// than waiting for the slot: with one dial at a time and the second
// dial's handshake held by the registry, the first connection carries
// every request but that one. Without the hand-off, every waiting
// request queued behind the held handshake.
func TestHTTP1BurstRidesOnFreedConnections(t *testing.T) {
	const burst = 6
	p := newTestPKI(t)
	var handshakes atomic.Int32
	arrived, first, later := make(chan struct{}, burst), make(chan struct{}), make(chan struct{})
	cfg := p.upstreamTLS("http/1.1")
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		n := handshakes.Add(1)
		arrived <- struct{}{}
		if n == 1 {
			<-first
		} else {
			<-later
		}
		return nil, nil
	}
	up := startUpstreamWith(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), nil)
	t.Cleanup(func() { closeOnce(first); closeOnce(later) })
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
	waiting := make(chan struct{}, burst)
	w.bridge.client.dials = newDialSlots(1)
	w.bridge.client.dials.waitFunc = func() { waiting <- struct{}{} }

	node := w.node(t, "h2")
	answers := make(chan *http.Response, burst)
	for i := range burst {
		go func() { answers <- <-getAsync(node, fmt.Sprintf("/v2/team/app/manifests/burst%d", i)) }()
	}
	for got := 0; got < 1+(burst-1); got++ { // the first handshake, the other requests waiting
		select {
		case <-arrived:
		case <-waiting:
		case <-time.After(waitLimit):
			t.Fatalf("the burst did not reach one handshake and %d waiting dials", burst-1)
		}
	}
	closeOnce(first)
	for i := range burst - 1 {
		select {
		case resp := <-answers:
			if resp == nil || resp.StatusCode != 200 {
				t.Fatalf("answer %d: %v", i, resp)
			}
		case <-time.After(waitLimit):
			t.Fatalf("%d of %d requests answered while the second handshake is held, want %d: the waiting requests did not take the first connection", i, burst, burst-1)
		}
	}
	closeOnce(later)
	if resp := <-answers; resp == nil || resp.StatusCode != 200 {
		t.Fatalf("the last answer: %v", resp)
	}
	if n := handshakes.Load(); n != 2 {
		t.Errorf("%d handshakes for a burst of %d, want 2", n, burst)
	}
}
