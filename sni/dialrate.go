package sni

import (
	"net/netip"
	"sync"
	"time"
)

// DefaultDialRatePerClient is the default of Route.DialRatePerClient:
// the upstream dials one client address may start per second on a
// bridge route, in bursts of as many.
const DefaultDialRatePerClient = 32

// dialRateSources is how many client addresses' buckets are kept before
// the full ones (clients that have not dialed for a second) are dropped.
const dialRateSources = 4096

// dialRate bounds the rate of upstream dials per client address with a
// token bucket each: perSecond tokens a second, perSecond at most. A
// dial bound (max_dials_per_client) caps what is in flight at once; this
// caps what a client can buy over time, by completing handshakes (or
// connections) as fast as it can and closing them. The zero value, or
// perSecond <= 0, allows every dial.
type dialRate struct {
	perSecond int

	mu      sync.Mutex
	buckets map[netip.Addr]*dialBucket
	pruneAt int // len(buckets) that triggers the next prune
}

// dialBucket is one client's tokens at time at.
type dialBucket struct {
	tokens float64
	at     time.Time
}

// reserve takes a token for src at now and returns how long the dial must
// wait for it; false, taking nothing, when that is longer than max.
func (r *dialRate) reserve(src netip.Addr, now time.Time, max time.Duration) (time.Duration, bool) {
	if r.perSecond <= 0 {
		return 0, true
	}
	rate := float64(r.perSecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[src]
	if b == nil {
		r.pruneLocked(now)
		b = &dialBucket{tokens: rate, at: now}
		r.buckets[src] = b
	}
	b.tokens = min(rate, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	wait := time.Duration(0)
	if b.tokens < 1 {
		wait = time.Duration((1 - b.tokens) / rate * float64(time.Second))
	}
	if wait > max {
		return 0, false
	}
	b.tokens--
	return wait, true
}

// pruneLocked drops the buckets that are full at now once there are
// pruneAt of them: a client that dials again starts with a full bucket
// anyway.
func (r *dialRate) pruneLocked(now time.Time) {
	if r.buckets == nil {
		r.buckets = map[netip.Addr]*dialBucket{}
	}
	if len(r.buckets) < max(r.pruneAt, dialRateSources) {
		return
	}
	rate := float64(r.perSecond)
	for src, b := range r.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*rate >= rate {
			delete(r.buckets, src)
		}
	}
	r.pruneAt = 2 * len(r.buckets)
}
