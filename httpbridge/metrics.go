package httpbridge

import (
	"strconv"
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
	metricvec.DeleteRoute(route, m.requests, m.duration, m.inFlight, m.refused, m.retries, m.redirects, m.floods)
}

func (m *Metrics) begin(route string) {
	if m != nil {
		m.inFlight.WithLabelValues(route).Inc()
	}
}

// done counts a finished request.
func (m *Metrics) done(route string, kind oci.Kind, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(route).Dec()
	m.requests.WithLabelValues(route, string(kind), strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, string(kind)).Observe(d.Seconds())
}

func (m *Metrics) refusal(route, reason string) {
	if m != nil {
		m.refused.WithLabelValues(route, reason).Inc()
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
