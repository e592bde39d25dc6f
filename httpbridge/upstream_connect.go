package httpbridge

import (
	"context"

	"github.com/snigate/snigate/upstream"
)

// connect is a connection to addr for a request: an idle one (upProbe
// found it fit), else a new dial; while every dial slot is taken (a
// burst: MaxUpstreamDials), the request waits for a slot or for the
// first connection to addr another request gives back, whichever comes
// first, as net/http's Transport did: a burst costs the registry the
// handshakes of the first dials, and the later requests ride on their
// connections.
func (p *upPool) connect(ctx context.Context, addr string, h *upstream.Host) (*upConn, error) {
	if pc := p.getLive(addr); pc != nil {
		return pc, nil
	}
	slots := p.slots()
	if !slots.tryAcquire() {
		pc, err := p.waitSlot(ctx, addr, slots)
		if pc != nil || err != nil {
			return pc, err
		}
	}
	return p.dialHeld(ctx, addr, h, slots)
}

// redial is a new connection to addr, waiting for a dial slot only: the
// one retry of a request whose reused connection failed.
func (p *upPool) redial(ctx context.Context, addr string, h *upstream.Host) (*upConn, error) {
	slots := p.slots()
	if _, err := slots.acquire(ctx); err != nil {
		return nil, err
	}
	return p.dialHeld(ctx, addr, h, slots)
}

// dialHeld dials addr (upstream h) with a slot of slots held, and gives
// it back.
func (p *upPool) dialHeld(ctx context.Context, addr string, h *upstream.Host, slots *dialSlots) (*upConn, error) {
	defer slots.release()
	c, err := p.dial(ctx, addr, h)
	if err != nil {
		return nil, err
	}
	return newUpConn(p, addr, c), nil
}

// waitSlot waits for a slot of slots (nil, nil: taken) or a connection
// given back to addr (which it returns, no slot taken).
func (p *upPool) waitSlot(ctx context.Context, addr string, slots *dialSlots) (*upConn, error) {
	handed := p.await(addr)
	pc, err := slots.acquireOr(ctx, handed)
	late := p.unwait(addr, handed)
	switch {
	case late == nil:
		return pc, err
	case err != nil: // given back as the context ended: for another request
		p.put(late)
		return nil, err
	default: // given back as a slot came: no dial needed
		slots.release()
		return late, nil
	}
}

// await registers a request waiting for a connection to addr: the
// channel put sends it on. An idle connection put back since the request
// found none is sent at once.
func (p *upPool) await(addr string) chan *upConn {
	ch := make(chan *upConn, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc := p.popLocked(addr); pc != nil {
		ch <- pc
		return ch
	}
	p.waiting[addr] = append(p.waiting[addr], ch)
	return ch
}

// unwait ends the wait of ch, returning a connection sent on it and not
// taken.
func (p *upPool) unwait(addr string, ch chan *upConn) *upConn {
	p.mu.Lock()
	w := p.waiting[addr]
	for i, c := range w {
		if c == ch {
			p.waiting[addr] = append(w[:i:i], w[i+1:]...)
			break
		}
	}
	if len(p.waiting[addr]) == 0 {
		delete(p.waiting, addr)
	}
	p.mu.Unlock()
	select {
	case pc := <-ch:
		return pc
	default:
		return nil
	}
}
