package httpbridge

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/metricvec"
	"github.com/snigate/snigate/oci"
)

// Metrics are the httpbridge package's Prometheus series. Build them once
// per process with NewMetrics and share them across routes and reloads.
// A nil *Metrics is valid and records nothing.
type Metrics struct {
	requests  *prometheus.CounterVec   // route, kind, code
	duration  *prometheus.HistogramVec // route, kind
	inFlight  *prometheus.GaugeVec     // route
	refused   *prometheus.CounterVec   // route, reason
	retries   *prometheus.CounterVec   // route
	redirects *prometheus.CounterVec   // route, result
	dropped   *prometheus.CounterVec   // reason
	floods    *prometheus.CounterVec   // route

	mu      sync.Mutex
	deleted map[string]int // DeleteRoute's calls per route
}

// Label values of snigate_http_audit_dropped_total's reason.
const (
	DropQueueFull  = "queue_full"  // the writer's queue was full (a slow disk)
	DropWriteError = "write_error" // writing the line failed (a full disk)
)

// Label values of snigate_http_redirects_total's result.
const (
	RedirectFollowed = "followed" // fetched from the foreign host and streamed to the node
	RedirectFailed   = "failed"   // following failed: the node got 502
	RedirectRefused  = "refused"  // the target address is refused (loopback, link-local, the gateway's own...): 502
	RedirectPassed   = "passed"   // redirects: pass, or a redirect to the registry itself
)

// Label values of snigate_http_refused_total's reason.
var refusalReasons = []string{"host", "method", "repository"}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, still usable).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_http_requests_total",
			Help: "HTTP requests of nodes on http routes, by API kind and the status answered (code 0: the node left before an answer).",
		}, []string{"route", "kind", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "snigate_http_request_duration_seconds",
			Help:    "Time from a node's request to the end of its answer, by API kind.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900},
		}, []string{"route", "kind"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snigate_http_requests_in_flight",
			Help: "Node requests on http routes being answered.",
		}, []string{"route"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_http_refused_total",
			Help: "Node requests refused by the route's policy before reaching the registry: reason host (421), method (405), repository (403).",
		}, []string{"route", "reason"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_http_upstream_retries_total",
			Help: "Idempotent requests sent again to the next healthy upstream after the previous one failed before answering.",
		}, []string{"route"}),
		redirects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_http_redirects_total",
			Help: "Redirects from the registry to another host: followed by the gateway, failed while following, refused (a target address of the gateway's own, loopback, link-local...), or passed to the node.",
		}, []string{"route", "result"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_http_audit_dropped_total",
			Help: "Audit records not written: reason queue_full (the writer fell behind) or write_error (the file could not be written).",
		}, []string{"reason"}),
		floods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_http_h2_reset_floods_total",
			Help: "Node HTTP/2 connections closed (GOAWAY ENHANCE_YOUR_CALM) because the node reset most of the streams it opened (rapid reset).",
		}, []string{"route"}),
	}
	m.dropped.WithLabelValues(DropQueueFull)
	m.dropped.WithLabelValues(DropWriteError)
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.inFlight, m.refused, m.retries, m.redirects, m.dropped, m.floods)
	}
	return m
}

// InitRoute creates route's counters at 0 so that increase() sees the
// first event.
func (m *Metrics) InitRoute(route string) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(route)
	m.retries.WithLabelValues(route)
	m.floods.WithLabelValues(route)
	metricvec.Init(m.refused.WithLabelValues, []string{route}, refusalReasons...)
	metricvec.Init(m.redirects.WithLabelValues, []string{route}, RedirectFollowed, RedirectFailed, RedirectRefused, RedirectPassed)
}

// DeleteRoute removes every series labelled with route; call it for
// routes that a reload removed.
func (m *Metrics) DeleteRoute(route string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.deleted == nil {
		m.deleted = make(map[string]int)
	}
	m.deleted[route]++
	m.mu.Unlock()
	metricvec.DeleteRoute(route, m.requests, m.duration, m.inFlight, m.refused, m.retries, m.redirects, m.floods)
}

// deletions is how many times DeleteRoute removed route's series.
func (m *Metrics) deletions(route string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleted[route]
}

// routeMetrics are one route's series of the request path, looked up
// once when the route's bridge is built (WithLabelValues hashes every
// label and takes the vector's lock: four times a request otherwise).
// A nil *routeMetrics records nothing.
type routeMetrics struct {
	m        *Metrics
	route    string
	gen      int // m.deletions(route) when built: a later deletion removed the route
	inFlight prometheus.Gauge
	duration map[oci.Kind]prometheus.Observer // every oci.Kinds
	refused  map[string]prometheus.Counter    // every refusalReasons

	mu       sync.RWMutex
	requests map[kindCode]prometheus.Counter // created at a (kind, code)'s first request
}

// kindCode is a label pair of snigate_http_requests_total.
type kindCode struct {
	kind oci.Kind
	code int
}

// forRoute returns route's series of the request path (nil for a nil
// m). Series deleted by DeleteRoute are not recreated by a bridge that
// still serves the removed route.
func (m *Metrics) forRoute(route string) *routeMetrics {
	if m == nil {
		return nil
	}
	rm := &routeMetrics{
		m: m, route: route, gen: m.deletions(route), inFlight: m.inFlight.WithLabelValues(route),
		duration: make(map[oci.Kind]prometheus.Observer, len(oci.Kinds)),
		refused:  make(map[string]prometheus.Counter, len(refusalReasons)),
		requests: make(map[kindCode]prometheus.Counter),
	}
	for _, k := range oci.Kinds {
		rm.duration[k] = m.duration.WithLabelValues(route, string(k))
	}
	for _, r := range refusalReasons {
		rm.refused[r] = m.refused.WithLabelValues(route, r)
	}
	return rm
}

func (rm *routeMetrics) begin() {
	if rm != nil {
		rm.inFlight.Inc()
	}
}

// done counts a finished request.
func (rm *routeMetrics) done(kind oci.Kind, status int, d time.Duration) {
	if rm == nil {
		return
	}
	rm.inFlight.Dec()
	rm.counter(kind, status).Inc()
	if obs := rm.duration[kind]; obs != nil { // every kind ParseURL returns
		obs.Observe(d.Seconds())
	}
}

// removed reports whether DeleteRoute removed the route's series since
// rm was built (a reload removed the route while this bridge served its
// last requests): no series of it is created again.
func (rm *routeMetrics) removed() bool { return rm.m.deletions(rm.route) != rm.gen }

// detached is a counter of no series, for a removed route.
var detached = prometheus.NewCounter(prometheus.CounterOpts{Name: "detached", Help: "a removed route's requests, never registered"})

// counter is the requests counter of (kind, status), created once.
func (rm *routeMetrics) counter(kind oci.Kind, status int) prometheus.Counter {
	k := kindCode{kind, status}
	rm.mu.RLock()
	c := rm.requests[k]
	rm.mu.RUnlock()
	if c != nil {
		return c
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if c = rm.requests[k]; c == nil && rm.removed() {
		return detached
	}
	if c == nil {
		c = rm.m.requests.WithLabelValues(rm.route, string(kind), strconv.Itoa(status))
		rm.requests[k] = c
	}
	return c
}

func (rm *routeMetrics) refusal(reason string) {
	if rm == nil {
		return
	}
	if c := rm.refused[reason]; c != nil { // every reason the policy gives
		c.Inc()
	}
}

func (m *Metrics) retry(route string) {
	if m != nil {
		m.retries.WithLabelValues(route).Inc()
	}
}

func (m *Metrics) redirect(route, result string) {
	if m != nil {
		m.redirects.WithLabelValues(route, result).Inc()
	}
}

func (m *Metrics) flood(route string) {
	if m != nil {
		m.floods.WithLabelValues(route).Inc()
	}
}

func (m *Metrics) drop(reason string) {
	if m != nil {
		m.dropped.WithLabelValues(reason).Inc()
	}
}
