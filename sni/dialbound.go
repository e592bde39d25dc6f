package sni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Defaults of Route.MaxDials and Route.MaxDialsPerClient, and how long a
// dial over either bound (or over Route.DialRatePerClient) waits for a
// slot.
const (
	// DefaultMaxDials bounds a bridge route's upstream dials in progress
	// (TCP plus the upstream TLS handshake with the edge identity).
	DefaultMaxDials = 64
	// DefaultMaxDialsPerClient bounds them per client address.
	DefaultMaxDialsPerClient = 8
	// DialQueueWait is how long a dial over a bound waits for a slot to
	// free before the connection is refused with result "dial_limit".
	DialQueueWait = time.Second
)

// resultDialLimit: the route's (or the client's) upstream dials in
// progress were at their bound for DialQueueWait.
const resultDialLimit = "dial_limit"

// errDialLimit is wrapped by the error of a connection refused because
// its dial found no slot within DialQueueWait.
var errDialLimit = errors.New("too many upstream dials in progress")

// dialSlots bounds the upstream dials in progress of one route, in all
// and per client address. The zero value allows none; set max and
// perClient (both positive, or <= 0 for no bound) before use.
type dialSlots struct {
	max, perClient int
	wait           time.Duration // DialQueueWait; tests shorten it
	rate           dialRate      // per client over time (DialRatePerClient)

	mu       sync.Mutex
	total    int
	bySource map[netip.Addr]int
	freed    chan struct{} // closed, and replaced, whenever a slot frees
}

// acquire takes a slot for a dial on behalf of src, waiting up to d.wait
// for one to free; it returns the func that gives the slot back.
func (d *dialSlots) acquire(ctx context.Context, src netip.Addr) (func(), error) {
	if err := d.waitTurn(ctx, src); err != nil {
		return nil, err
	}
	var timeout <-chan time.Time
	for {
		freed, ok := d.take(src)
		if ok {
			return func() { d.give(src) }, nil
		}
		if timeout == nil {
			t := time.NewTimer(d.wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return nil, d.limitError(src)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitTurn takes src's token of the dial rate, waiting for it when it is
// due within d.wait; a client over its rate for longer is refused.
func (d *dialSlots) waitTurn(ctx context.Context, src netip.Addr) error {
	wait, ok := d.rate.reserve(src, time.Now(), d.wait)
	if !ok {
		return fmt.Errorf("%w: client %s started more than %d dials a second (dial_rate_per_client)", errDialLimit, src, d.rate.perSecond)
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// take takes a slot if both bounds allow it; else it returns the channel
// that is closed when one frees.
func (d *dialSlots) take(src netip.Addr) (<-chan struct{}, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if (d.max > 0 && d.total >= d.max) || (d.perClient > 0 && d.bySource[src] >= d.perClient) {
		if d.freed == nil {
			d.freed = make(chan struct{})
		}
		return d.freed, false
	}
	if d.bySource == nil {
		d.bySource = map[netip.Addr]int{}
	}
	d.total++
	d.bySource[src]++
	return nil, true
}

func (d *dialSlots) give(src netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.total--
	if d.bySource[src]--; d.bySource[src] <= 0 {
		delete(d.bySource, src)
	}
	if d.freed != nil {
		close(d.freed)
		d.freed = nil
	}
}

func (d *dialSlots) limitError(src netip.Addr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Errorf("%w: %d on the route (max_dials %d), %d for client %s (max_dials_per_client %d), none freed within %v",
		errDialLimit, d.total, d.max, d.bySource[src], src, d.perClient, d.wait)
}

// boundedConnect is connect under the route's dial bounds: the dial
// counts in snigate_upstream_dials_in_progress while it runs.
func (s *Server) boundedConnect(ctx context.Context, ss *session, dial upstreamDialer) (net.Conn, func(), error) {
	src, _ := addrOf(ss.client)
	give, err := ss.route.dials.acquire(ctx, src)
	if err != nil {
		return nil, nil, fmt.Errorf("route %q: %w", ss.route.Name, err)
	}
	defer give()
	ss.rm.dialStarted()
	defer ss.rm.dialEnded()
	return s.connect(ctx, ss, dial)
}

// dialLimited records a connection refused by the dial bounds.
func (s *Server) dialLimited(ss *session, err error) {
	ss.end(resultDialLimit, err)
	s.warnf(resultDialLimit+"/"+ss.route.Name, "connection refused: too many upstream dials in progress on the route or from this client; "+
		"a client opening many connections at once, or slow upstreams (raise max_dials / max_dials_per_client if this is legitimate)",
		"route", ss.route.Name, "client", ss.clientString(), "err", err)
}
