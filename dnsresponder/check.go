package dnsresponder

import (
	"errors"

	"github.com/miekg/dns"
)

// headerLen is the size of a DNS message header.
const headerLen = 12

// Reasons logged for the queries checkQuery rejects.
var (
	errResponse    = errors.New("a response (QR=1) instead of a query: not answered")
	errOpcode      = errors.New("opcode other than QUERY: answered NOTIMP")
	errQuestions   = errors.New("not exactly one question: answered FORMERR")
	errClass       = errors.New("unknown class: answered FORMERR")
	errOPTs        = errors.New("more than one OPT record: answered FORMERR")
	errEDNSVersion = errors.New("EDNS version other than 0: answered BADVERS")
	errOverloaded  = errors.New("DefaultMaxInFlight queries already waiting on forwarders: not answered, the client retries")
)

// queryProblem returns how to answer a query the handler must not answer
// normally (a result label) and what is wrong with it; "" and nil for a
// good query.
func queryProblem(req *dns.Msg) (string, error) {
	switch {
	case req.Response:
		return ResultDropped, errResponse
	case req.Opcode != dns.OpcodeQuery:
		return ResultNotImp, errOpcode
	case len(req.Question) != 1:
		return ResultFormErr, errQuestions
	case !knownClass(req.Question[0].Qclass):
		return ResultFormErr, errClass
	case countOPT(req) > 1:
		return ResultFormErr, errOPTs
	}
	if opt := req.IsEdns0(); opt != nil && opt.Version() != 0 {
		return ResultBadVers, errEDNSVersion
	}
	return "", nil
}

// knownClass reports whether class is one DNS defines for a question:
// IN, CS, CH, HS, NONE or ANY.
func knownClass(class uint16) bool {
	_, ok := dns.ClassToString[class]
	return ok
}

func countOPT(m *dns.Msg) int {
	n := 0
	for _, rr := range m.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			n++
		}
	}
	return n
}

// reject answers a bad query as result says (or not at all), and logs it
// at most once a minute per result.
func (h *Handler) reject(w dns.ResponseWriter, req *dns.Msg, result string, err error) string {
	h.warn.log(result, clientAddr(w), err)
	switch result {
	case ResultNotImp:
		return h.rcode(w, req, dns.RcodeNotImplemented, result)
	case ResultBadVers:
		return h.rcode(w, req, dns.RcodeBadVers, result)
	case ResultFormErr:
		m := new(dns.Msg)
		m.SetRcodeFormatError(req) // no question: never larger than the query
		h.write(w, req, m)
	}
	return result
}
