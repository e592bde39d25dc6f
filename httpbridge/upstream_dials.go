package httpbridge

import (
	"context"
	"fmt"
)

// MaxUpstreamDials bounds the upstream connections a route's bridge opens
// at the same moment (TCP plus the mTLS handshake), over all its
// upstreams. A dial beyond it waits, under its request's context, for one
// to finish: a burst of node requests that finds the HTTP/1.1 pool empty
// (a start, a rotation, a flood of slow requests) costs the registry at
// most this many handshakes at once, and the waiting requests take the
// connections the first ones free. As sni.DefaultMaxDials for byte-bridged
// routes.
const MaxUpstreamDials = 64

// dialSlots is the route's bound on upstream dials in progress.
type dialSlots struct {
	slots chan struct{}
	// waitFunc, tests only, is called when a dial starts waiting.
	waitFunc func()
}

func newDialSlots(n int) *dialSlots { return &dialSlots{slots: make(chan struct{}, n)} }

// acquire takes a slot, waiting while every one is taken, and returns
// the func that gives it back; an error when ctx ends first.
func (d *dialSlots) acquire(ctx context.Context) (release func(), err error) {
	select {
	case d.slots <- struct{}{}:
		return d.release, nil
	default:
	}
	if d.waitFunc != nil {
		d.waitFunc()
	}
	select {
	case d.slots <- struct{}{}:
		return d.release, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for an upstream dial (%d in progress): %w", cap(d.slots), context.Cause(ctx))
	}
}

func (d *dialSlots) release() { <-d.slots }

// tryAcquire takes a slot when one is free at once.
func (d *dialSlots) tryAcquire() bool {
	select {
	case d.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// acquireOr waits for a slot (nil, nil: taken, to be released) or for
// a connection on handed, which another request gave back meanwhile
// (the connection: no slot taken), under ctx.
func (d *dialSlots) acquireOr(ctx context.Context, handed <-chan *upConn) (*upConn, error) {
	if d.waitFunc != nil {
		d.waitFunc()
	}
	select {
	case d.slots <- struct{}{}:
		return nil, nil
	case pc := <-handed:
		return pc, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for an upstream dial (%d in progress): %w", cap(d.slots), context.Cause(ctx))
	}
}
