package dnsresponder

import (
	"net"
	"sync"

	"github.com/miekg/dns"
)

// MaxUDPSize is the largest reply sent over UDP, whatever larger buffer a
// client advertises (the DNS flag day 2020 value, which avoids IP
// fragmentation); it is also the size the responder advertises in its OPT
// record. A client without EDNS gets at most 512 bytes. Larger answers are
// truncated (TC set) and the client retries over TCP.
const MaxUDPSize = 1232

// write sends reply: with an OPT record when req had one, truncated to the
// client's UDP size when the client asked over UDP, whole over TCP.
func (h *Handler) write(w dns.ResponseWriter, req, reply *dns.Msg) {
	fitOPT(req, reply)
	if isTCP(w) {
		reply.Compress = true
	} else {
		reply.Truncate(udpSize(req))
	}
	if err := h.writePacked(w, reply); err != nil {
		h.logger.Debug("dns: write reply", "client", clientAddr(w), "err", err)
	}
}

// packBuffers hold replies being packed (a Handler's packBuffers); most
// fit in MaxUDPSize. The zero value is ready to use.
type packBuffers struct{ pool sync.Pool }

func (p *packBuffers) get() *[]byte {
	if bp, ok := p.pool.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, MaxUDPSize)
	return &b
}

func (p *packBuffers) put(bp *[]byte) { p.pool.Put(bp) }

// writePacked packs m into a pooled buffer and writes it, as WriteMsg
// would without the allocation (the responder never signs with TSIG).
func (h *Handler) writePacked(w dns.ResponseWriter, m *dns.Msg) error {
	bp := h.bufs.get()
	defer h.bufs.put(bp)
	b, err := m.PackBuffer(*bp)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// fitOPT gives reply exactly one OPT record, advertising MaxUDPSize, when
// req had one, and none otherwise. A forwarder's OPT is kept (with its
// options, such as extended errors) and rewritten; one is added otherwise,
// with req's DO bit.
func fitOPT(req, reply *dns.Msg) {
	qopt := req.IsEdns0()
	ropt := removeOPT(reply)
	if qopt == nil {
		if reply.Rcode > 0xF { // an extended rcode cannot be told without OPT
			reply.Rcode = dns.RcodeServerFailure
		}
		return
	}
	if ropt == nil {
		ropt = &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		ropt.SetDo(qopt.Do())
	}
	ropt.SetVersion(0)
	ropt.SetUDPSize(MaxUDPSize)
	reply.Extra = append(reply.Extra, ropt)
}

// removeOPT deletes every OPT record from m's additional section and
// returns the last one.
func removeOPT(m *dns.Msg) *dns.OPT {
	var found *dns.OPT
	extra := m.Extra[:0]
	for _, rr := range m.Extra {
		if opt, ok := rr.(*dns.OPT); ok {
			found = opt
			continue
		}
		extra = append(extra, rr)
	}
	clear(m.Extra[len(extra):])
	m.Extra = extra
	return found
}

// udpSize is the largest UDP reply req's client accepts: 512 without EDNS,
// else its advertised size within [512, MaxUDPSize].
func udpSize(req *dns.Msg) int {
	opt := req.IsEdns0()
	if opt == nil {
		return dns.MinMsgSize
	}
	return min(max(int(opt.UDPSize()), dns.MinMsgSize), MaxUDPSize)
}

// isTCP reports whether the client asked over a stream connection.
func isTCP(w dns.ResponseWriter) bool {
	_, ok := w.RemoteAddr().(*net.TCPAddr)
	return ok
}

// clientAddr is the client's address for logs ("" when unknown).
func clientAddr(w dns.ResponseWriter) string {
	if a := w.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}
