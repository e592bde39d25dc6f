package upstream

import (
	"cmp"
	"slices"
)

// Candidates returns the hosts that are healthy and ready, in the order to
// try them: the caller dials the first and, when that dial or handshake
// fails, the next. RoundRobin rotates the first host on every call;
// LeastConn orders by active connections, ties in round-robin order. An
// empty result means no host can take a connection. The slice is the
// caller's.
func (p *Pool) Candidates() []*Host {
	hosts := make([]*Host, 0, len(p.hosts))
	for i := range p.hosts {
		if h := p.hosts[i].Load(); h.usable.Load() {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return hosts
	}
	rotate(hosts, int((p.robin.Add(1)-1)%uint64(len(hosts))))
	if p.cfg.Balance == LeastConn {
		byActive(hosts)
	}
	return hosts
}

// rotate moves hosts[k] to the front, keeping the cyclic order.
func rotate(hosts []*Host, k int) {
	slices.Reverse(hosts[:k])
	slices.Reverse(hosts[k:])
	slices.Reverse(hosts)
}

// byActive sorts hosts by their active connections, stably so that the
// round-robin rotation breaks ties. The counts are read once, so a count
// moving during the sort cannot confuse it.
func byActive(hosts []*Host) {
	type loaded struct {
		h      *Host
		active int64
	}
	ls := make([]loaded, len(hosts))
	for i, h := range hosts {
		ls[i] = loaded{h, h.Active()}
	}
	slices.SortStableFunc(ls, func(a, b loaded) int { return cmp.Compare(a.active, b.active) })
	for i := range ls {
		hosts[i] = ls[i].h
	}
}
