package sni

import (
	"io"
	"sync"
	"time"
)

// A connection closed to make room in a full handshake budget is not
// closed at once: its socket is held, unread, for TarpitDelay, then
// closed. An attacker that reconnects as soon as its socket closes (the
// "immediate reconnect" slowloris) would otherwise turn every eviction
// into another accept, and the churn, not the held sockets, is what
// delays legitimate handshakes: measured with 300+300 reconnecting slow
// sockets, the p99 of legitimate handshakes went from 5x to about 1.5x the
// unattacked p99 (BenchmarkHandshakeUnderSlowloris). At most TarpitMax
// sockets are held; beyond that the oldest is closed.
const (
	TarpitDelay = 2 * time.Second
	TarpitMax   = 1024
)

// tarpit holds sockets until their delay is over, Close, or room is
// needed. The zero value is ready; stop closes everything it holds.
type tarpit struct {
	mu      sync.Mutex
	held    map[io.Closer]*time.Timer
	order   []io.Closer // oldest first; may name sockets closed already
	stopped bool
}

// hold keeps c open (unread) for TarpitDelay.
func (t *tarpit) hold(c io.Closer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		c.Close()
		return
	}
	if t.held == nil {
		t.held = make(map[io.Closer]*time.Timer)
	}
	for len(t.held) >= TarpitMax && len(t.order) > 0 {
		t.releaseLocked(t.order[0])
		t.order = t.order[1:]
	}
	t.held[c] = time.AfterFunc(TarpitDelay, func() { t.release(c) })
	t.order = append(t.order, c)
	if len(t.order) > 2*TarpitMax {
		t.compactLocked()
	}
}

func (t *tarpit) release(c io.Closer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseLocked(c)
}

func (t *tarpit) releaseLocked(c io.Closer) {
	if tm, ok := t.held[c]; ok {
		tm.Stop()
		delete(t.held, c)
		c.Close()
	}
}

// compactLocked drops the sockets released already from order.
func (t *tarpit) compactLocked() {
	kept := t.order[:0]
	for _, c := range t.order {
		if _, ok := t.held[c]; ok {
			kept = append(kept, c)
		}
	}
	t.order = kept
}

// stop closes every held socket; later ones are closed at once.
func (t *tarpit) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for c := range t.held {
		t.releaseLocked(c)
	}
	t.order = nil
}
