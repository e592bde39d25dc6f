package dnsresponder

import (
	"encoding/binary"
	"net"

	"github.com/miekg/dns"
)

// questionPointer is a compression pointer to the question's name, which
// starts right after the 12-byte header: every record a routed answer
// carries is owned by that name.
var questionPointer = []byte{0xc0, headerLen}

// wireAnswers are a Policy's replies in wire form, built once by
// NewPolicy: the records that follow the question, each owned by
// questionPointer. The UDP fast path appends them to a copy of the query's
// header and question, so a routed answer needs no dns.Msg at all.
type wireAnswers struct {
	a, aaaa, any []byte // answer sections, A, AAAA and both
	na, naaaa    uint16 // records in a and aaaa
	soa          []byte // authority section of a NODATA answer
}

func newWireAnswers(a, aaaa []net.IP, ttl uint32) wireAnswers {
	var w wireAnswers
	for _, ip := range a {
		w.a = appendWireRR(w.a, dns.TypeA, ttl, ip)
	}
	for _, ip := range aaaa {
		w.aaaa = appendWireRR(w.aaaa, dns.TypeAAAA, ttl, ip)
	}
	w.na, w.naaaa = uint16(len(a)), uint16(len(aaaa))
	w.any = append(append([]byte(nil), w.a...), w.aaaa...)
	w.soa = appendWireRR(nil, dns.TypeSOA, ttl, soaRdata(ttl))
	return w
}

// appendWireRR appends an IN record owned by questionPointer.
func appendWireRR(b []byte, rrtype uint16, ttl uint32, rdata []byte) []byte {
	b = append(b, questionPointer...)
	b = binary.BigEndian.AppendUint16(b, rrtype)
	b = binary.BigEndian.AppendUint16(b, dns.ClassINET)
	b = binary.BigEndian.AppendUint32(b, ttl)
	b = binary.BigEndian.AppendUint16(b, uint16(len(rdata)))
	return append(b, rdata...)
}

// soaRdata is the data of the SOA in Policy.soa, uncompressed.
func soaRdata(ttl uint32) []byte {
	b := make([]byte, 0, 64)
	b = appendWireName(b, SOAMname)
	b = appendWireName(b, SOARname)
	for _, v := range []uint32{1, 3600, 600, 86400, ttl} { // serial, refresh, retry, expire, minimum
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// appendWireName appends a fixed, valid domain name in wire form.
func appendWireName(b []byte, name string) []byte {
	buf := make([]byte, 256)
	n, err := dns.PackDomainName(name, buf, 0, nil, false)
	if err != nil {
		panic("dnsresponder: bad constant name " + name + ": " + err.Error())
	}
	return append(b, buf[:n]...)
}

// wireRecords returns the records answering qtype about a routed name, in
// wire form, with how many go in the answer and authority sections: the
// addresses for A, AAAA and ANY, else the SOA of a NODATA answer. The
// caller handles the types Policy.Answer refuses (AXFR, IXFR).
func (p *Policy) wireRecords(qtype uint16) (rrs []byte, an, ns uint16) {
	w := &p.answers().wire
	switch {
	case qtype == dns.TypeA && w.na > 0:
		return w.a, w.na, 0
	case qtype == dns.TypeAAAA && w.naaaa > 0:
		return w.aaaa, w.naaaa, 0
	case qtype == dns.TypeANY && w.na+w.naaaa > 0:
		return w.any, w.na + w.naaaa, 0
	}
	return w.soa, 0, 1
}
