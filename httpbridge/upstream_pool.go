package httpbridge

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/snigate/snigate/upstream"
)

// upPool is the idle HTTP/1.1 connections of one pooled identity, per
// upstream address: at most maxIdle each, the most recently used taken
// first (LIFO: the warm ones stay warm, the others idle out), each
// closed after idleTimeout unused. A registry that closes an idle
// connection leaves it in CLOSE_WAIT here until that timer fires or a
// request takes it (and, finding it dead, retries on a new dial): no
// goroutine watches idle connections.
type upPool struct {
	slots       func() *dialSlots                                                          // the route's dial bound
	dial        func(ctx context.Context, addr string, h *upstream.Host) (net.Conn, error) // with a slot held; h for passive health
	maxIdle     int
	idleTimeout time.Duration
	// expiredFunc, tests only, is called when an idle connection has
	// been closed for its idleTimeout.
	expiredFunc func()

	mu      sync.Mutex
	idle    map[string][]*upConn      // by address, oldest first
	waiting map[string][]chan *upConn // by address, requests waiting for a dial slot, first first
	retired bool
}

func newUpPool(slots func() *dialSlots, dial func(ctx context.Context, addr string, h *upstream.Host) (net.Conn, error)) *upPool {
	return &upPool{slots: slots, dial: dial, maxIdle: DefaultMaxIdleConnsPerHost, idleTimeout: DefaultUpstreamIdleTimeout,
		idle: make(map[string][]*upConn), waiting: make(map[string][]chan *upConn)}
}

// get is the most recently idled connection to addr, or nil.
func (p *upPool) get(addr string) *upConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.popLocked(addr)
}

// popLocked takes the most recently idled connection to addr, or nil;
// p.mu is held.
func (p *upPool) popLocked(addr string) *upConn {
	conns := p.idle[addr]
	if len(conns) == 0 {
		return nil
	}
	pc := conns[len(conns)-1]
	conns[len(conns)-1] = nil
	p.idle[addr] = conns[:len(conns)-1]
	pc.idleTimer.Stop() // a timer that fired already finds pc busy (expire)
	pc.idleSince = time.Time{}
	return pc
}

// put gives pc to the first request waiting for a dial slot to addr, or
// makes it idle, or closes it when the pool is retired or addr has
// maxIdle idle already.
func (p *upPool) put(pc *upConn) {
	p.mu.Lock()
	pc.reused = true
	if w := p.waiting[pc.addr]; len(w) > 0 && !p.retired {
		p.waiting[pc.addr] = w[1:]
		w[0] <- pc // cap 1, one send per waiter
		p.mu.Unlock()
		return
	}
	conns := p.idle[pc.addr]
	if p.retired || len(conns) >= p.maxIdle {
		p.mu.Unlock()
		pc.close()
		return
	}
	pc.idleSince = time.Now()
	if pc.idleTimer == nil {
		pc.idleTimer = time.AfterFunc(p.idleTimeout, func() { p.expire(pc) })
	} else {
		pc.idleTimer.Reset(p.idleTimeout)
	}
	p.idle[pc.addr] = append(conns, pc)
	p.mu.Unlock()
}

// expire closes pc when it is still idle and has been for idleTimeout:
// a timer that fired as a request took pc, and was reset by its put
// since, finds it busy or idle too shortly and leaves it.
func (p *upPool) expire(pc *upConn) {
	p.mu.Lock()
	if pc.idleSince.IsZero() || time.Since(pc.idleSince) < p.idleTimeout || !p.remove(pc) {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	pc.close()
	if p.expiredFunc != nil {
		p.expiredFunc()
	}
}

// remove takes pc out of the idle list of its address; p.mu is held.
func (p *upPool) remove(pc *upConn) bool {
	conns := p.idle[pc.addr]
	for i, c := range conns {
		if c == pc {
			copy(conns[i:], conns[i+1:])
			conns[len(conns)-1] = nil
			p.idle[pc.addr] = conns[:len(conns)-1]
			pc.idleSince = time.Time{}
			return true
		}
	}
	return false
}

// closeIdle closes every idle connection; the busy ones stay.
func (p *upPool) closeIdle() {
	p.mu.Lock()
	var all []*upConn
	for addr, conns := range p.idle {
		for _, pc := range conns {
			pc.idleTimer.Stop()
			pc.idleSince = time.Time{}
		}
		all = append(all, conns...)
		delete(p.idle, addr)
	}
	p.mu.Unlock()
	for _, pc := range all {
		pc.close()
	}
}

// retire closes the idle connections and every busy one at the end of
// its request (put).
func (p *upPool) retire() {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
	p.closeIdle()
}

// idleCount is how many connections to addr are idle (tests).
func (p *upPool) idleCount(addr string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle[addr])
}
