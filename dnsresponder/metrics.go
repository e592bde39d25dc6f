package dnsresponder

import (
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/metricvec"
)

// Values of the result label of snigate_dns_queries_total and
// snigate_dns_query_duration_seconds.
const (
	ResultAnswered  = "answered"  // routed name, A/AAAA records in the answer
	ResultNoData    = "nodata"    // routed name, NOERROR with no answer and an SOA
	ResultForwarded = "forwarded" // another name, a forwarder's reply relayed
	ResultRefused   = "refused"   // no forwarders, or a class other than IN
	ResultServFail  = "servfail"  // no forwarder answered within the budget
	ResultFormErr   = "formerr"   // malformed query answered FORMERR
	ResultNotImp    = "notimp"    // opcode other than QUERY
	ResultBadVers   = "badvers"   // EDNS version other than 0
	ResultDropped   = "dropped"   // not answered at all (a response, or no header)
	ResultDenied    = "denied"    // client outside Config.Allow, answered REFUSED
)

// Values of the result label of snigate_dns_upstream_requests_total.
const (
	upstreamOK       = "ok"
	upstreamServFail = "servfail"
	upstreamTimeout  = "timeout"
	upstreamError    = "error"
)

// upstreamResults are the values of snigate_dns_upstream_requests_total's
// result, created at 0 for every forwarder.
var upstreamResults = [...]string{upstreamOK, upstreamServFail, upstreamTimeout, upstreamError}

// initQtypes are the query types whose snigate_dns_queries_total series
// exist from the start, for every result: the ones nodes ask for routed
// names. Other types appear with their first query (the set is open).
var initQtypes = [...]string{"A", "AAAA"}

// qtypeInvalid labels a query without exactly one readable question.
const qtypeInvalid = "invalid"

// qtypeOther labels a query type miekg/dns has no name for; it keeps the
// label's cardinality bounded whatever clients send.
const qtypeOther = "other"

// Metrics are the responder's Prometheus series. Build them once per process
// with NewMetrics and hand the same value to every Handler generation, so
// they survive reloads. A nil *Metrics is valid and records nothing.
type Metrics struct {
	queries          *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	upstreamUp       *prometheus.GaugeVec
	tcpRefusedConns  prometheus.Counter
	tcpEvictedConns  prometheus.Counter
	upstreamRequests *prometheus.CounterVec
	answers          *AnswerMetrics

	// Per-query lookups skip the vectors' label hashing (hot path).
	counters  sync.Map                       // queryKey -> prometheus.Counter
	durations map[string]prometheus.Observer // result -> histogram, read-only
}

type queryKey struct{ qtype, result string }

// results are the values of the result label, for the durations map.
var results = []string{ResultAnswered, ResultNoData, ResultForwarded, ResultRefused, ResultServFail,
	ResultFormErr, ResultNotImp, ResultBadVers, ResultDropped, ResultDenied}

// NewMetrics creates the responder's series and registers them with reg
// (nil: not registered, still usable). It panics if they are already
// registered, like prometheus.MustRegister.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_dns_queries_total",
			Help: "DNS queries received, by query type and result.",
		}, []string{"qtype", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "snigate_dns_query_duration_seconds",
			Help:    "Time from a parsed DNS query to its reply being written, by result.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"result"}),
		upstreamUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snigate_dns_upstream_up",
			Help: "1 while a DNS forwarder answers, 0 after a timeout or network error.",
		}, []string{"upstream"}),
		upstreamRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_dns_upstream_requests_total",
			Help: "Queries sent to DNS forwarders, by forwarder and result (ok, servfail, timeout, error).",
		}, []string{"upstream", "result"}),
		tcpRefusedConns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snigate_dns_tcp_connections_refused_total",
			Help: "TCP connections to the DNS responder closed at once because the limit of open ones (in all, none idle, or per client) was reached.",
		}),
		tcpEvictedConns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snigate_dns_tcp_connections_evicted_total",
			Help: "Idle TCP connections to the DNS responder closed to admit a new one because the limit of open ones was reached.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.queries, m.duration, m.upstreamUp, m.upstreamRequests, m.tcpRefusedConns, m.tcpEvictedConns)
	}
	m.answers = NewAnswerMetrics(reg, AnswerMetricName)
	m.durations = make(map[string]prometheus.Observer, len(results))
	for _, r := range results {
		m.durations[r] = m.duration.WithLabelValues(r)
		for _, qt := range initQtypes {
			m.counter(qt, r).Add(0)
		}
	}
	return m
}

// Answers returns snigate_dns_answer_up, for AnswerCheckConfig.Metrics
// (nil for a nil *Metrics).
func (m *Metrics) Answers() *AnswerMetrics {
	if m == nil {
		return nil
	}
	return m.answers
}

// query counts one query and, when d >= 0, observes its duration.
func (m *Metrics) query(qtype, result string, d time.Duration) {
	if m == nil {
		return
	}
	m.counter(qtype, result).Inc()
	if d < 0 {
		return
	}
	o, ok := m.durations[result]
	if !ok {
		o = m.duration.WithLabelValues(result)
	}
	o.Observe(d.Seconds())
}

// counter returns snigate_dns_queries_total{qtype,result}. The label
// values are bounded (qtypeLabel), and so is the cache.
func (m *Metrics) counter(qtype, result string) prometheus.Counter {
	k := queryKey{qtype, result}
	if c, ok := m.counters.Load(k); ok {
		return c.(prometheus.Counter)
	}
	c := m.queries.WithLabelValues(qtype, result)
	m.counters.Store(k, c)
	return c
}

func (m *Metrics) upstream(addr, result string) {
	if m == nil {
		return
	}
	m.upstreamRequests.WithLabelValues(addr, result).Inc()
}

// deleteUpstream drops the series of a forwarder no longer configured.
func (m *Metrics) deleteUpstream(addr string) {
	if m == nil {
		return
	}
	metricvec.DeleteMatch(prometheus.Labels{"upstream": addr}, m.upstreamUp, m.upstreamRequests)
}

func (m *Metrics) tcpRefused() {
	if m != nil {
		m.tcpRefusedConns.Inc()
	}
}

func (m *Metrics) tcpEvicted() {
	if m != nil {
		m.tcpEvictedConns.Inc()
	}
}

// setUpstreamUp publishes whether the forwarder addr answers. A handler
// sets it for each forwarder when it is built, so it also creates that
// forwarder's request counters at 0: increase() sees the first failure.
func (m *Metrics) setUpstreamUp(addr string, up bool) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.upstreamUp.WithLabelValues(addr).Set(v)
	metricvec.Init(m.upstreamRequests.WithLabelValues, []string{addr}, upstreamResults[:]...)
}

// qtypeLabel names the query type of req for the qtype label: its
// mnemonic, qtypeOther for a number without one, qtypeInvalid without a
// single question.
func qtypeLabel(req *dns.Msg) string {
	if req == nil || len(req.Question) != 1 {
		return qtypeInvalid
	}
	return qtypeName(req.Question[0].Qtype)
}

// qtypeName is the qtype label of a question of type t.
func qtypeName(t uint16) string {
	if s, ok := dns.TypeToString[t]; ok {
		return s
	}
	return qtypeOther
}

// AnswerMetricName is the answer check's gauge in snigate.
const AnswerMetricName = "snigate_dns_answer_up"

// AnswerMetrics is the answer check's gauge, 1 while an answer address
// passes its checks, 0 once it failed fall of them, by address. A nil
// *AnswerMetrics records nothing.
type AnswerMetrics struct{ up *prometheus.GaugeVec }

// NewAnswerMetrics creates the gauge named name (AnswerMetricName in
// snigate; the CoreDNS plugin gives its own) and registers it with reg
// (nil: not registered). Registering it again returns the gauge already
// registered, as CoreDNS's server blocks and reloads do.
func NewAnswerMetrics(reg prometheus.Registerer, name string) *AnswerMetrics {
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: name,
		Help: "1 while a dns.answer address passes the answer check (TCP connection and ServerHello), 0 once it failed fall checks in a row.",
	}, []string{"address"})
	if reg != nil {
		var are prometheus.AlreadyRegisteredError
		if err := reg.Register(up); errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.GaugeVec); ok {
				up = existing
			}
		}
	}
	return &AnswerMetrics{up: up}
}

func (m *AnswerMetrics) set(a netip.Addr, up bool) {
	if m == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	m.up.WithLabelValues(a.String()).Set(v)
}

func (m *AnswerMetrics) delete(a netip.Addr) {
	if m != nil {
		m.up.DeleteLabelValues(a.String())
	}
}
