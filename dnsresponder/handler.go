package dnsresponder

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"
	"github.com/snigate/snigate/names"
)

// Config configures a Handler. It is a plain struct literal, filled by the
// gateway from the parsed configuration (dns.* keys) on every reload.
type Config struct {
	// Names are the routed names: every route's SNI patterns plus
	// dns.names. Nil means none: every query is forwarded. The table must
	// not be changed after New.
	Names *names.Table[struct{}]
	// Answer are the addresses given for routed names, IPv4 ones in A
	// records and IPv6 ones in AAAA records. Empty: every routed query gets
	// NODATA.
	Answer []netip.Addr
	// AnswerCheck, when set, gives the addresses instead of Answer: those
	// of its addresses that are up (dns.answer_check). Nil: Answer,
	// always. The caller runs it and stops it.
	AnswerCheck *AnswerCheck
	// TTL of routed answers and of their negative caching. Zero: DefaultTTL.
	TTL time.Duration
	// Forward are the resolvers (host:port) for every other name, tried in
	// order. Empty: other names get REFUSED.
	Forward []string
	// ForwardTimeout bounds one exchange with one forwarder (including a
	// TCP retry); it is at most ForwardBudget. Zero: DefaultForwardTimeout.
	ForwardTimeout time.Duration
	// ForwardBudget bounds the time spent on one query across all
	// forwarders; when it runs out the client gets SERVFAIL. Zero:
	// DefaultForwardBudget.
	ForwardBudget time.Duration
	// Allow lists the client networks answered (dns.allow, else
	// listen.allow). A query from any other client gets REFUSED, routed
	// names included, counted with result denied. Empty: every client is
	// answered.
	Allow []netip.Prefix
	// Logger receives forwarder state changes and rate-limited warnings
	// about bad queries. Nil: slog.Default().
	Logger *slog.Logger
	// Metrics records queries and forwarder state. Nil: nothing recorded.
	Metrics *Metrics
}

// Handler is the responder's dns.Handler: the Policy answers routed names,
// everything else is forwarded; bad queries get FORMERR, NOTIMP, BADVERS or
// nothing. It is safe for concurrent use and holds no goroutines, so a
// reload simply builds a new one and hands it to Server.SetHandler.
type Handler struct {
	policy *Policy
	fwd    exchanger // nil: no forwarders, REFUSED
	allow  allowList // empty: every client
	logger *slog.Logger
	warn   *warnLimiter
	m      *Metrics
	bufs   packBuffers // of the replies being packed
}

// exchanger forwards a query and returns the upstream's reply, nil when no
// forwarder answered in time. clientTCP says how the client asked.
type exchanger interface {
	exchange(req *dns.Msg, clientTCP bool) *dns.Msg
}

var _ dns.Handler = (*Handler)(nil)

// New validates cfg and returns its Handler. It opens nothing.
func New(cfg Config) (*Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	policy := NewPolicy(cfg.Names, cfg.Answer, cfg.TTL)
	if cfg.AnswerCheck != nil {
		policy = NewCheckedPolicy(cfg.Names, cfg.AnswerCheck, cfg.TTL)
	}
	h := &Handler{
		policy: policy,
		allow:  slices.Clone(allowList(cfg.Allow)),
		logger: logger,
		warn:   newWarnLimiter(logger),
		m:      cfg.Metrics,
	}
	if len(cfg.Forward) > 0 {
		h.fwd = newForwarders(cfg.Forward, cfg.ForwardTimeout, cfg.ForwardBudget, logger, cfg.Metrics)
	}
	return h, nil
}

func (cfg *Config) validate() error {
	for i, a := range cfg.Answer {
		if !a.IsValid() {
			return fmt.Errorf("dns answer[%d]: want an IP address such as 192.0.2.10, got the zero address", i)
		}
	}
	for i, p := range cfg.Allow {
		if !p.IsValid() {
			return fmt.Errorf("dns allow[%d]: want a CIDR such as 10.0.0.0/8, got the zero prefix", i)
		}
	}
	for i, addr := range cfg.Forward {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("dns forward[%d] %q: want host:port such as 10.96.0.10:53: %w", i, addr, err)
		}
	}
	switch {
	case cfg.TTL < 0:
		return fmt.Errorf("dns ttl %v: want a duration of zero or more", cfg.TTL)
	case cfg.ForwardTimeout < 0:
		return fmt.Errorf("dns forward timeout %v: want a duration of zero or more", cfg.ForwardTimeout)
	case cfg.ForwardBudget < 0:
		return fmt.Errorf("dns forward budget %v: want a duration of zero or more", cfg.ForwardBudget)
	}
	return nil
}

// Adopt carries over, from old (the handler a reload replaces), the health
// of the forwarders both have, so that a forwarder found failing stays
// tried last instead of costing every query a timeout again; and it
// drops the metric series of old's forwarders that h does not have. Call
// it before h serves.
func (h *Handler) Adopt(old *Handler) {
	if old == nil {
		return
	}
	prev, ok := old.fwd.(*forwarders)
	if !ok {
		return
	}
	kept := map[string]bool{}
	if cur, ok := h.fwd.(*forwarders); ok {
		for _, f := range cur.list {
			kept[f.addr] = true
			for _, of := range prev.list {
				if of.addr == f.addr {
					f.failing.Store(of.failing.Load())
					f.retryAt.Store(of.retryAt.Load())
					h.m.setUpstreamUp(f.addr, !f.failing.Load())
					break
				}
			}
		}
	}
	for _, of := range prev.list {
		if !kept[of.addr] {
			h.m.deleteUpstream(of.addr)
		}
	}
}

// Policy returns the routed-name policy the handler answers with.
func (h *Handler) Policy() *Policy { return h.policy }

// ServeDNS answers req on w and records it in the metrics.
func (h *Handler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	start := time.Now()
	result := h.serve(w, req)
	h.m.query(qtypeLabel(req), result, time.Since(start))
}

// serve writes the reply to req, if any, and returns the result label.
func (h *Handler) serve(w dns.ResponseWriter, req *dns.Msg) string {
	if h.denied(w, req) {
		return h.deny(w, req)
	}
	if result, err := queryProblem(req); err != nil {
		return h.reject(w, req, result, err)
	}
	if reply, ok := h.policy.Answer(req); ok {
		return h.answer(w, req, reply)
	}
	if req.Question[0].Qclass != dns.ClassINET {
		return h.rcode(w, req, dns.RcodeRefused, ResultRefused)
	}
	return h.forward(w, req)
}

// answer writes the policy's reply for a routed name.
func (h *Handler) answer(w dns.ResponseWriter, req, reply *dns.Msg) string {
	reply.RecursionAvailable = h.fwd != nil
	h.write(w, req, reply)
	switch {
	case reply.Rcode != dns.RcodeSuccess:
		return ResultRefused
	case len(reply.Answer) == 0:
		return ResultNoData
	}
	return ResultAnswered
}

// forward relays the forwarders' reply to a name that is not routed.
func (h *Handler) forward(w dns.ResponseWriter, req *dns.Msg) string {
	if h.fwd == nil {
		return h.rcode(w, req, dns.RcodeRefused, ResultRefused)
	}
	reply := h.fwd.exchange(req, isTCP(w))
	if reply == nil {
		return h.rcode(w, req, dns.RcodeServerFailure, ResultServFail)
	}
	reply.Id = req.Id
	h.write(w, req, reply)
	return ResultForwarded
}

// rcode writes an empty reply with rcode.
func (h *Handler) rcode(w dns.ResponseWriter, req *dns.Msg, rcode int, result string) string {
	m := new(dns.Msg)
	m.SetRcode(req, rcode)
	m.RecursionAvailable = h.fwd != nil
	h.write(w, req, m)
	return result
}

// InvalidMsg records a packet the server could not parse: m shorter than a
// header is dropped; the server answers any other one FORMERR itself.
// Server calls it through its MsgInvalidFunc.
func (h *Handler) InvalidMsg(m []byte, err error) {
	result := ResultFormErr
	if len(m) < headerLen {
		result = ResultDropped
	}
	h.m.query(qtypeInvalid, result, -1)
	h.warn.log(result, "", err)
}

// TCPRefused counts a TCP connection the server closed over its limit.
func (h *Handler) TCPRefused() { h.m.tcpRefused() }

// TCPEvicted counts an idle TCP connection the server closed to admit a
// new one.
func (h *Handler) TCPEvicted() { h.m.tcpEvicted() }

// mayBlock reports whether answering req may wait on the network: a
// well-formed IN query about a name that is not routed, with forwarders
// to ask. The UDP loop answers every other query on its reading goroutine.
func (h *Handler) mayBlock(req *dns.Msg) bool {
	if h.fwd == nil {
		return false
	}
	if _, err := queryProblem(req); err != nil {
		return false
	}
	q := req.Question[0]
	return q.Qclass == dns.ClassINET && !h.policy.Routed(q.Name)
}

// overloaded records a query the server dropped because too many were
// waiting on forwarders already.
func (h *Handler) overloaded(req *dns.Msg, client string) {
	h.m.query(qtypeLabel(req), ResultDropped, -1)
	h.warn.logMsg("dns: too many queries waiting on forwarders, dropped one", ResultDropped+" overloaded", client, errOverloaded)
}
