package sni

import (
	"net/netip"
	"sync"
)

// handshakeBudget bounds the connections of one kind of listener (every
// TLS listener shares one budget, the CONNECT listener has its own) that
// have not yet sent a whole ClientHello, or CONNECT request and
// ClientHello: Config.MaxHandshakes. A connection enters when it is
// admitted (or, from a trusted balancer, as soon as it is accepted, keyed
// by the balancer until its PROXY header names the client) and leaves when
// its ClientHello is read or it ends.
//
// When the budget is full, a new connection is not refused: the oldest
// pending connection of the source with the most pending ones is closed
// (result handshake_limit) and the new one takes its place. A slow client
// (a slowloris dribbling its hello, a stalled one) therefore competes
// with itself, while clients that send their ClientHello at once pass
// through, since they are pending for a round trip at most. Refusing
// newcomers instead would let 1 byte/s per socket hold the budget against
// everyone.
type handshakeBudget struct {
	mu      sync.Mutex
	n       int // pending connections
	sources map[netip.Addr]*pendingQueue
}

// pendingQueue is one source's pending connections, oldest first, linked
// through the sessions themselves (no allocation per connection).
type pendingQueue struct {
	addr       netip.Addr
	head, tail *session
	n          int
}

// pending is a session's place in a handshakeBudget, guarded by that
// budget's mu (a session only ever enters the budget of its kind).
type pending struct {
	budget     *handshakeBudget // nil: not pending
	queue      *pendingQueue
	prev, next *session
}

// enter makes ss pending under src. When limit (> 0) connections are
// pending already, it first removes the victim and returns it; the caller
// closes it.
func (b *handshakeBudget) enter(ss *session, src netip.Addr, limit int) (victim *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if limit > 0 && b.n >= limit {
		if victim = b.victimLocked(); victim != nil {
			b.removeLocked(victim)
		}
	}
	if b.sources == nil {
		b.sources = make(map[netip.Addr]*pendingQueue)
	}
	q := b.sources[src]
	if q == nil {
		q = &pendingQueue{addr: src}
		b.sources[src] = q
	}
	ss.pend = pending{budget: b, queue: q, prev: q.tail}
	if q.tail != nil {
		q.tail.pend.next = ss
	} else {
		q.head = ss
	}
	q.tail = ss
	q.n++
	b.n++
	return victim
}

// victimLocked returns the oldest pending connection of the source with
// the most; among equal sources, the one whose oldest is oldest.
func (b *handshakeBudget) victimLocked() *session {
	var best *pendingQueue
	for _, q := range b.sources {
		if best == nil || q.n > best.n || q.n == best.n && q.head.start.Before(best.head.start) {
			best = q
		}
	}
	if best == nil {
		return nil
	}
	return best.head
}

// leave removes ss if it is pending here; it reports whether it was.
func (b *handshakeBudget) leave(ss *session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ss.pend.budget != b {
		return false
	}
	b.removeLocked(ss)
	return true
}

func (b *handshakeBudget) removeLocked(ss *session) {
	q := ss.pend.queue
	if p := ss.pend.prev; p != nil {
		p.pend.next = ss.pend.next
	} else {
		q.head = ss.pend.next
	}
	if n := ss.pend.next; n != nil {
		n.pend.prev = ss.pend.prev
	} else {
		q.tail = ss.pend.prev
	}
	ss.pend = pending{}
	q.n--
	b.n--
	if q.n == 0 {
		delete(b.sources, q.addr)
	}
}

// pendingCount returns the number of pending connections.
func (b *handshakeBudget) pendingCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
