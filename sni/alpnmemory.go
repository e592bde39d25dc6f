package sni

import (
	"strings"
	"sync"
)

// alpnMemorySize bounds the ALPN lists remembered per upstream address;
// beyond it, the least recently used answer is forgotten. Real clients
// send a handful of lists ("h2,http/1.1", "http/1.1", none).
const alpnMemorySize = 32

// alpnMemory remembers, per upstream address of a route, the protocol the
// upstream chose for each ALPN list a client offered, as learned from
// every real upstream handshake. With it the bridge can finish the
// client's handshake, offering the protocol the upstream will choose,
// before it spends an upstream handshake: a ClientHello alone buys none.
// It is safe for concurrent use; the zero value is empty.
type alpnMemory struct {
	mu     sync.Mutex
	clock  uint64 // orders uses, for forgetting the least recent
	byAddr map[string][]alpnAnswer
}

// alpnAnswer is one remembered choice.
type alpnAnswer struct {
	offered string // alpnKey of the client's list
	proto   string // what the upstream chose; "" for none
	used    uint64 // alpnMemory.clock at the last use
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
			if a.offered != key {
				continue
			}
			if ok && a.proto != proto {
				return "", false // the upstreams disagree: ask the one dialed
			}
			proto, ok, a.used = a.proto, true, m.clock
		}
	}
	return proto, ok
}

// learn records that the upstream at addr chose proto for offered.
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
		if answers[i].offered == key {
			answers[i].proto, answers[i].used = proto, m.clock
			return
		}
	}
	a := alpnAnswer{offered: key, proto: proto, used: m.clock}
	if len(answers) < alpnMemorySize {
		m.byAddr[addr] = append(answers, a)
		return
	}
	oldest := 0
	for i := range answers {
		if answers[i].used < answers[oldest].used {
			oldest = i
		}
	}
	answers[oldest] = a
}
