package dnsresponder

import (
	"encoding/binary"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// badCase is a packet that is not a good query, how it must be answered
// (noReply: not at all) and how it is counted.
type badCase struct {
	name    string
	packet  []byte
	noReply bool
	id      uint16 // of the reply
	rcode   int
	qtype   string
	result  string
}

// header is a raw DNS header.
func header(id, flags, qd, an, ns, ar uint16) []byte {
	b := make([]byte, headerLen)
	for i, v := range []uint16{id, flags, qd, an, ns, ar} {
		binary.BigEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func packed(t testing.TB, id uint16, edit func(m *dns.Msg)) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(exactName, dns.TypeA)
	m.Id = id
	edit(m)
	b, err := m.Pack()
	if err != nil {
		t.Fatalf("pack: %v", err)
	}
	return b
}

func badCases(t testing.TB) []badCase {
	opt := func(version uint8) *dns.OPT {
		o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		o.SetUDPSize(1232)
		o.SetVersion(version)
		return o
	}
	twoQuestions := func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }
	return []badCase{
		{name: "garbage shorter than a header", packet: []byte{0xde, 0xad, 0xbe}, noReply: true,
			qtype: qtypeInvalid, result: ResultDropped},
		{name: "garbage after a header", packet: append(header(0x1101, 0, 1, 0, 0, 0), 0xff, 0xff, 0xff, 0xff),
			id: 0x1101, rcode: dns.RcodeFormatError, qtype: qtypeInvalid, result: ResultFormErr},
		{name: "question cut short", packet: append(header(0x1102, 0, 1, 0, 0, 0), "\x08registry\x07exa"...),
			id: 0x1102, rcode: dns.RcodeFormatError, qtype: qtypeInvalid, result: ResultFormErr},
		// miekg/dns reads the missing type and class as 0: class 0 is unknown.
		{name: "question without type and class", packet: packed(t, 0x1103, func(*dns.Msg) {})[:headerLen+23],
			id: 0x1103, rcode: dns.RcodeFormatError, qtype: "None", result: ResultFormErr},
		{name: "header only, claiming a question", packet: header(0x1104, 0, 1, 0, 0, 0),
			id: 0x1104, rcode: dns.RcodeFormatError, qtype: qtypeInvalid, result: ResultFormErr},
		{name: "no question", packet: packed(t, 0x1105, func(m *dns.Msg) { m.Question = nil }),
			id: 0x1105, rcode: dns.RcodeFormatError, qtype: qtypeInvalid, result: ResultFormErr},
		{name: "two questions", packet: packed(t, 0x1106, twoQuestions),
			id: 0x1106, rcode: dns.RcodeFormatError, qtype: qtypeInvalid, result: ResultFormErr},
		{name: "a response instead of a query", packet: packed(t, 0x1107, func(m *dns.Msg) { m.Response = true }),
			noReply: true, qtype: "A", result: ResultDropped},
		{name: "opcode NOTIFY", packet: packed(t, 0x1108, func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }),
			id: 0x1108, rcode: dns.RcodeNotImplemented, qtype: "A", result: ResultNotImp},
		{name: "opcode UPDATE", packet: packed(t, 0x1109, func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate }),
			id: 0x1109, rcode: dns.RcodeNotImplemented, qtype: "A", result: ResultNotImp},
		{name: "unknown class", packet: packed(t, 0x110a, func(m *dns.Msg) { m.Question[0].Qclass = 42 }),
			id: 0x110a, rcode: dns.RcodeFormatError, qtype: "A", result: ResultFormErr},
		{name: "class CH for a routed name", packet: packed(t, 0x110b, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }),
			id: 0x110b, rcode: dns.RcodeRefused, qtype: "A", result: ResultRefused},
		{name: "class CH for another name", packet: packed(t, 0x110c, func(m *dns.Msg) {
			m.Question[0] = dns.Question{Name: "version.bind.", Qtype: dns.TypeTXT, Qclass: dns.ClassCHAOS}
		}), id: 0x110c, rcode: dns.RcodeRefused, qtype: "TXT", result: ResultRefused},
		{name: "EDNS version 1", packet: packed(t, 0x110d, func(m *dns.Msg) { m.Extra = append(m.Extra, opt(1)) }),
			id: 0x110d, rcode: dns.RcodeBadVers, qtype: "A", result: ResultBadVers},
		{name: "two OPT records", packet: packed(t, 0x110e, func(m *dns.Msg) { m.Extra = append(m.Extra, opt(0), opt(0)) }),
			id: 0x110e, rcode: dns.RcodeFormatError, qtype: "A", result: ResultFormErr},
	}
}

// goodQuery follows each bad packet on the same socket: its reply shows
// the responder is still answering, and on TCP that the bad packet's
// reply, if any, came first.
const goodID = 0xbeef

func goodQuery(t testing.TB) []byte {
	return packed(t, goodID, func(*dns.Msg) {})
}

func TestBadPacketsTCP(t *testing.T) {
	m := NewMetrics(prometheus.NewPedanticRegistry())
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Metrics: m}, "")
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	co := &dns.Conn{Conn: c}
	for _, tc := range badCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			for _, p := range [][]byte{tc.packet, goodQuery(t)} {
				if _, err := co.Write(p); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
			var replies []*dns.Msg
			for len(replies) == 0 || replies[len(replies)-1].Id != goodID {
				r, err := co.ReadMsg()
				if err != nil {
					t.Fatalf("read: %v (connection lost after a bad packet)", err)
				}
				replies = append(replies, r)
			}
			checkBadReplies(t, tc, replies[:len(replies)-1])
		})
	}
	// After Shutdown every handler has run and counted.
	if err := w.server.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkBadCounts(t, m, badCases(t))
}

func TestBadPacketsUDP(t *testing.T) {
	m := NewMetrics(prometheus.NewPedanticRegistry())
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Metrics: m}, "")
	cases := badCases(t)
	conns := make([]*net.UDPConn, len(cases))
	replies := make([][]*dns.Msg, len(cases))
	for i, tc := range cases {
		c, err := net.Dial("udp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c.(*net.UDPConn)
		for _, p := range [][]byte{tc.packet, goodQuery(t)} {
			if _, err := c.Write(p); err != nil {
				t.Fatalf("%s: write: %v", tc.name, err)
			}
		}
		// Replies may come in either order over UDP: read until the good one.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		replies[i] = readUntilGood(t, c, nil)
	}
	// After Shutdown every handler has run: a late reply is in the socket.
	if err := w.server.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		replies[i] = append(replies[i], drain(t, conns[i])...)
		t.Run(tc.name, func(t *testing.T) { checkBadReplies(t, tc, replies[i]) })
	}
	checkBadCounts(t, m, cases)
}

// readUntilGood appends the replies read from c to got, and returns them
// without the good query's, once that came or the read deadline passed.
func readUntilGood(t testing.TB, c net.Conn, got []*dns.Msg) []*dns.Msg {
	buf := make([]byte, dns.MaxMsgSize)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return got
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:n]); err != nil {
			t.Errorf("reply does not parse: %v", err)
			continue
		}
		if r.Id == goodID {
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
				t.Errorf("good query after a bad packet: %v", r)
			}
			return got
		}
		got = append(got, r)
	}
}

// drain returns the datagrams waiting on c, without waiting for more.
func drain(t testing.TB, c *net.UDPConn) []*dns.Msg {
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got []*dns.Msg
	buf := make([]byte, dns.MaxMsgSize)
	for {
		n := -1
		raw.Read(func(fd uintptr) bool { // the socket is non-blocking: no wait
			n, _, _ = syscall.Recvfrom(int(fd), buf, 0)
			return true
		})
		if n < 0 {
			return got
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:n]); err != nil {
			t.Errorf("late reply does not parse: %v", err)
			continue
		}
		got = append(got, r)
	}
}

func checkBadReplies(t *testing.T, tc badCase, replies []*dns.Msg) {
	t.Helper()
	switch {
	case tc.noReply && len(replies) > 0:
		t.Fatalf("answered %v, want no reply", replies[0])
	case tc.noReply:
		return
	case len(replies) != 1:
		t.Fatalf("%d replies, want 1", len(replies))
	}
	r := replies[0]
	if r.Id != tc.id || !r.Response {
		t.Errorf("reply ID %#x QR %v, want ID %#x QR true", r.Id, r.Response, tc.id)
	}
	if r.Rcode != tc.rcode {
		t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
	}
	if len(r.Answer) > 0 {
		t.Errorf("answer records in an error reply: %v", r.Answer)
	}
}

func checkBadCounts(t *testing.T, m *Metrics, cases []badCase) {
	t.Helper()
	type key struct{ qtype, result string }
	want := map[key]float64{{"A", ResultAnswered}: float64(len(cases))} // the good queries
	for _, tc := range cases {
		want[key{tc.qtype, tc.result}]++
	}
	for k, n := range want {
		if got := counterValue(t, m, k.qtype, k.result); got != n {
			t.Errorf("snigate_dns_queries_total{qtype=%q,result=%q} = %v, want %v", k.qtype, k.result, got, n)
		}
	}
}
