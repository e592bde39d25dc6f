package dnsresponder

import (
	"encoding/binary"
	"time"
	"unsafe"

	"github.com/miekg/dns"
)

// The UDP fast path: a routed name's reply built straight from the query's
// bytes, with no dns.Msg. It covers the common query: one IN question
// about a routed name, written plainly (letters, digits, '-', '_'), with
// at most a plain OPT record (version 0, no options). Anything else takes
// the slow path (unpack, ServeDNS), which gives the same reply for the
// queries both cover (TestFastPathMatchesSlowPath, FuzzFastPath).

// Header flag bits.
const (
	flagQR     = 1 << 15
	flagOpcode = 0xf << 11
	flagAA     = 1 << 10
	flagRD     = 1 << 8
	flagRA     = 1 << 7
	flagCD     = 1 << 4
	ednsDO     = 1 << 15 // in the OPT record's TTL
	maxNameLen = 255     // a name in wire form
)

// wireQuery is what the fast path reads of a query.
type wireQuery struct {
	qend    int    // end of the question
	qtype   uint16 // of the question
	nameLen int    // bytes of the canonical name in the caller's buffer
	edns    bool   // an OPT record came with it
	do      bool   // its DO bit
	udpSize int    // the largest reply the client takes over UDP
}

// parseWireQuery reads a query the fast path can answer, writing its name
// in canonical form (lower case, no trailing dot) into name; false for
// anything else.
func parseWireQuery(b []byte, name *[maxNameLen]byte) (wireQuery, bool) {
	var q wireQuery
	if len(b) < headerLen+5 {
		return q, false
	}
	flags := binary.BigEndian.Uint16(b[2:])
	counts := binary.BigEndian.Uint64(b[4:]) // QD, AN, NS, AR
	if flags&(flagQR|flagOpcode) != 0 || counts>>16 != 1<<32 || counts&0xffff > 1 {
		return q, false
	}
	off, ok := readPlainName(b, name, &q.nameLen)
	if !ok || off+4 > len(b) || binary.BigEndian.Uint16(b[off+2:]) != dns.ClassINET {
		return q, false
	}
	q.qtype = binary.BigEndian.Uint16(b[off:])
	q.qend = off + 4
	q.udpSize = dns.MinMsgSize
	if counts&0xffff == 0 {
		return q, q.qend == len(b)
	}
	return q, readPlainOPT(b[q.qend:], &q)
}

// readPlainName reads the question's name at offset 12 into name, lower
// case and dot-separated, and returns the offset after it. It declines
// names the slow path would escape or could read differently: empty,
// compressed, or with bytes other than letters, digits, '-' and '_'.
func readPlainName(b []byte, name *[maxNameLen]byte, n *int) (int, bool) {
	off := headerLen
	for {
		if off >= len(b) {
			return 0, false
		}
		l := int(b[off])
		off++
		switch {
		case l == 0:
			return off, *n > 0 && off-headerLen <= maxNameLen
		case l > 63 || off+l > len(b) || *n+l+1 > maxNameLen:
			return 0, false
		}
		if *n > 0 {
			name[*n] = '.'
			*n++
		}
		for _, c := range b[off : off+l] {
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			default:
				return 0, false
			}
			name[*n] = c
			*n++
		}
		off += l
	}
}

// readPlainOPT reads the additional section when it is exactly one OPT
// record owned by the root, EDNS version 0, without options.
func readPlainOPT(b []byte, q *wireQuery) bool {
	if len(b) != 11 || b[0] != 0 || binary.BigEndian.Uint16(b[1:]) != dns.TypeOPT ||
		b[6] != 0 || binary.BigEndian.Uint16(b[9:]) != 0 { // version, RDLENGTH
		return false
	}
	q.edns = true
	q.do = binary.BigEndian.Uint16(b[7:])&ednsDO != 0
	q.udpSize = min(max(int(binary.BigEndian.Uint16(b[3:])), dns.MinMsgSize), MaxUDPSize)
	return true
}

// wireReply is a reply the fast path built, and how to count it.
type wireReply struct {
	b      []byte
	qtype  uint16
	result string
}

// answerWire appends to dst the reply to query when it is a plain query
// about a routed name (see parseWireQuery) whose reply fits the client's
// UDP size; false for anything else, which the caller unpacks and hands
// to ServeDNS. It records nothing: the caller calls wroteWire once the
// reply is sent.
func (h *Handler) answerWire(dst, query []byte) (wireReply, bool) {
	var name [maxNameLen]byte
	q, ok := parseWireQuery(query, &name)
	if !ok || q.qtype == dns.TypeAXFR || q.qtype == dns.TypeIXFR {
		return wireReply{}, false
	}
	// The table only reads the name during the lookup.
	if !h.policy.Routed(unsafe.String(&name[0], q.nameLen)) {
		return wireReply{}, false
	}
	rrs, an, ns := h.policy.wireRecords(q.qtype)
	b := h.appendWireHeader(dst, query, an, ns, q.edns)
	b = append(b, query[headerLen:q.qend]...)
	b = append(b, rrs...)
	if q.edns {
		b = appendWireOPT(b, q.do)
	}
	if len(b) > q.udpSize {
		return wireReply{}, false // the slow path truncates
	}
	result := ResultAnswered
	if an == 0 {
		result = ResultNoData
	}
	return wireReply{b: b, qtype: q.qtype, result: result}, true
}

// appendWireHeader appends the header of an authoritative NOERROR reply
// to query, as Msg.SetReply would set it: the query's ID, RD and CD.
func (h *Handler) appendWireHeader(b, query []byte, an, ns uint16, edns bool) []byte {
	flags := flagQR | flagAA | binary.BigEndian.Uint16(query[2:])&(flagRD|flagCD)
	if h.fwd != nil {
		flags |= flagRA
	}
	var ar uint16
	if edns {
		ar = 1
	}
	b = append(b, query[0], query[1])
	for _, v := range []uint16{flags, 1, an, ns, ar} {
		b = binary.BigEndian.AppendUint16(b, v)
	}
	return b
}

// appendWireOPT appends the OPT record fitOPT would add: MaxUDPSize,
// version 0, the query's DO bit, no options.
func appendWireOPT(b []byte, do bool) []byte {
	var flags uint16
	if do {
		flags = ednsDO
	}
	b = append(b, 0) // root
	b = binary.BigEndian.AppendUint16(b, dns.TypeOPT)
	b = binary.BigEndian.AppendUint16(b, MaxUDPSize)
	b = append(b, 0, 0) // extended rcode, version
	b = binary.BigEndian.AppendUint16(b, flags)
	return binary.BigEndian.AppendUint16(b, 0) // RDLENGTH
}

// wroteWire records a reply of the fast path, started at start.
func (h *Handler) wroteWire(r wireReply, start time.Time) {
	h.m.query(qtypeName(r.qtype), r.result, time.Since(start))
}
