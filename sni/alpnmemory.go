package sni

import (
	"slices"
	"strings"
	"sync"
)

// alpnMemorySize bounds the ALPN lists remembered per upstream address;
// beyond it, the answer used least often (the least recently among
// those) is forgotten. Real clients send a handful of lists
// ("h2,http/1.1", "http/1.1", none), each used again and again, so a
// client cycling through made-up lists forgets only its own.
const alpnMemorySize = 32

// alpnColdDials bounds the upstream dials a route makes during a client's
// handshake to learn its first ALPN answer (see alpnMemory.startLearning).
const alpnColdDials = 4

// alpnMemory remembers, per upstream address of a route, the protocol the
// upstream chose for each ALPN list a client offered, learned from the
// dials of connections whose client completed its handshake. With it the
// bridge finishes the client's handshake, offering the protocol the
// upstream will choose, before it spends an upstream handshake: a
// ClientHello alone buys none. It is safe for concurrent use; the zero
// value is empty.
type alpnMemory struct {
	mu       sync.Mutex
	clock    uint64 // orders uses, for forgetting the least recent
	byAddr   map[string][]alpnAnswer
	learning bool // a cold dial is in progress (startLearning)
	colds    int  // cold dials made
}

// alpnAnswer is one remembered choice.
type alpnAnswer struct {
	offered []string // the client's list
	key     string   // alpnKey(offered)
	proto   string   // what the upstream chose; "" for none
	used    uint64   // alpnMemory.clock at the last use
	uses    int      // how often it was learned or recalled
}

// alpnKey encodes a list of protocol names unambiguously (as on the wire:
// a length byte before each name).
func alpnKey(offered []string) string {
	var b strings.Builder
	for _, p := range offered {
		b.WriteByte(byte(len(p)))
		b.WriteString(p)
	}
	return b.String()
}

// recall returns the protocol the route's upstreams chose for offered,
// when at least one upstream has answered that list and none answered it
// differently.
func (m *alpnMemory) recall(offered []string) (proto string, ok bool) {
	key := alpnKey(offered)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock++
	for _, answers := range m.byAddr {
		for i := range answers {
			a := &answers[i]
			if a.key != key {
				continue
			}
			if ok && a.proto != proto {
				return "", false // the upstreams disagree: predict, and check on the dial
			}
			proto, ok = a.proto, true
			a.used, a.uses = m.clock, a.uses+1
		}
	}
	return proto, ok
}

// predict guesses what the upstreams choose for a list no answer is
// remembered for (the dial after the client's handshake checks the
// guess): the protocol of the answer whose list shares most names with
// offered, among answers that chose a name offered; else no protocol when
// every upstream answered every list with none; else http/1.1 when
// offered (every HTTP upstream speaks it), else the client's first.
func (m *alpnMemory) predict(offered []string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	best, bestShared, answered, named := "", -1, false, false
	for _, answers := range m.byAddr {
		for _, a := range answers {
			answered = true
			if a.proto == "" {
				continue
			}
			named = true
			if !slices.Contains(offered, a.proto) {
				continue
			}
			if n := shared(a.offered, offered); n > bestShared {
				best, bestShared = a.proto, n
			}
		}
	}
	switch {
	case bestShared >= 0:
		return best
	case answered && !named, len(offered) == 0:
		return ""
	case slices.Contains(offered, "http/1.1"):
		return "http/1.1"
	}
	return offered[0]
}

// shared counts the names of a that b offers too.
func shared(a, b []string) int {
	n := 0
	for _, p := range a {
		if slices.Contains(b, p) {
			n++
		}
	}
	return n
}

// startLearning reports whether the bridge may dial during a client's
// handshake to learn the route's first answer: only while nothing is
// remembered, one dial at a time, and alpnColdDials times at most, so
// that hellos cannot buy upstream handshakes however many arrive before
// a client completes one. A true answer must be followed by endLearning.
func (m *alpnMemory) startLearning() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.byAddr) > 0 || m.learning || m.colds >= alpnColdDials {
		return false
	}
	m.learning = true
	m.colds++
	return true
}

// cold reports whether the memory may still dial during a handshake.
func (m *alpnMemory) cold() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byAddr) == 0 && m.colds < alpnColdDials
}

// endLearning ends the cold dial startLearning allowed.
func (m *alpnMemory) endLearning() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.learning = false
}

// learn records that the upstream at addr chose proto for offered; call
// it only for a client that completed its handshake.
func (m *alpnMemory) learn(addr string, offered []string, proto string) {
	key := alpnKey(offered)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock++
	if m.byAddr == nil {
		m.byAddr = map[string][]alpnAnswer{}
	}
	answers := m.byAddr[addr]
	for i := range answers {
		if answers[i].key == key {
			a := &answers[i]
			a.proto, a.used, a.uses = proto, m.clock, a.uses+1
			return
		}
	}
	a := alpnAnswer{offered: slices.Clone(offered), key: key, proto: proto, used: m.clock, uses: 1}
	if len(answers) < alpnMemorySize {
		m.byAddr[addr] = append(answers, a)
		return
	}
	answers[leastUsed(answers)] = a
}

// leastUsed returns the index of the answer used least often, the least
// recently used among those.
func leastUsed(answers []alpnAnswer) int {
	victim := 0
	for i, a := range answers {
		v := answers[victim]
		if a.uses < v.uses || a.uses == v.uses && a.used < v.used {
			victim = i
		}
	}
	return victim
}
