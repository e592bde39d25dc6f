package sni

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/metricvec"
)

// Metrics are the sni package's Prometheus series. Build them once per
// process with NewMetrics and share them across servers and reloads. A nil
// *Metrics is valid and records nothing.
type Metrics struct {
	connections    *prometheus.CounterVec   // listener, route, result
	active         *prometheus.GaugeVec     // route
	bytes          *prometheus.CounterVec   // route, direction
	connectSeconds *prometheus.HistogramVec // route
	helloSeconds   prometheus.Histogram
	durationSecs   *prometheus.HistogramVec // route
	dialFailures   *prometheus.CounterVec   // route, upstream
	pending        *prometheus.GaugeVec     // kind
	pendingByKind  [2]prometheus.Gauge      // pending's tls and connect children
	dialsActive    *prometheus.GaugeVec     // route
	clientAuth     *prometheus.CounterVec   // route, reason

	// unrouted caches connections' children of connections that ended
	// before a route was chosen (route ""), as routeMetrics.ended does for
	// each route.
	unrouted endedCounters
}

// endedCounters caches snigate_connections_total's children for one route
// by listener and result: a connection ends with one lock-free lookup
// instead of hashing and validating three label values under the
// vector's lock. A route's cache lives in its routeMetrics, so a reload's
// new Route starts afresh after DeleteRoute.
type endedCounters struct{ m sync.Map } // endedKey -> prometheus.Counter

type endedKey struct{ listener, result string }

func (e *endedCounters) inc(vec *prometheus.CounterVec, listener, route, result string) {
	k := endedKey{listener, result}
	if c, ok := e.m.Load(k); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := vec.WithLabelValues(listener, route, result)
	e.m.Store(k, c)
	c.Inc()
}

// Label values of snigate_bytes_total's direction.
const (
	DirectionUpstream   = "upstream"   // client -> upstream
	DirectionDownstream = "downstream" // upstream -> client
)

// NewMetrics creates the series and registers them with reg (nil: not
// registered, still usable).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		connections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_connections_total",
			Help: "Connections accepted on TLS and CONNECT listeners, by how they ended (result).",
		}, []string{"listener", "route", "result"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snigate_active_connections",
			Help: "Connections routed and not yet finished.",
		}, []string{"route"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_bytes_total",
			Help: "Bytes forwarded; direction upstream is client to upstream, downstream is upstream to client.",
		}, []string{"route", "direction"}),
		connectSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "snigate_upstream_connect_seconds",
			Help:    "Time to connect to an upstream, including retries and, in bridge mode, the upstream TLS handshake.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		helloSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "snigate_client_hello_seconds",
			Help:    "Time from accept until the whole ClientHello was read.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		durationSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "snigate_connection_duration_seconds",
			Help:    "Lifetime of routed connections.",
			Buckets: []float64{.01, .1, .5, 1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400},
		}, []string{"route"}),
		dialFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_upstream_dial_failures_total",
			Help: "Failed upstream dials (TCP, or TCP plus TLS handshake in bridge mode), each retried on the next candidate.",
		}, []string{"route", "upstream"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snigate_pending_handshakes",
			Help: "Connections that have not yet sent a whole ClientHello (CONNECT: request and ClientHello), by kind of listener (tls, connect); bounded by max_handshakes per kind.",
		}, []string{"kind"}),
		dialsActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snigate_upstream_dials_in_progress",
			Help: "Upstream dials of bridge routes in progress (TCP plus the upstream TLS handshake, retries included), bounded by max_dials.",
		}, []string{"route"}),
		clientAuth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_client_auth_failures_total",
			Help: "Client certificates refused in the handshake on bridge routes with serve.client_ca, by reason (no_certificate, unknown_ca, expired, wrong_usage, revoked, name_not_allowed, bad_certificate).",
		}, []string{"route", "reason"}),
	}
	m.pendingByKind = [2]prometheus.Gauge{m.pending.WithLabelValues(kindTLS), m.pending.WithLabelValues(kindConnect)}
	if reg != nil {
		reg.MustRegister(m.connections, m.active, m.bytes, m.connectSeconds, m.helloSeconds, m.durationSecs, m.dialFailures, m.pending, m.dialsActive, m.clientAuth)
	}
	return m
}

// DeleteRoute removes every series labelled with route; call it for routes
// that a reload removed.
func (m *Metrics) DeleteRoute(route string) {
	if m == nil {
		return
	}
	metricvec.DeleteRoute(route, m.connections, m.active, m.bytes, m.connectSeconds, m.durationSecs,
		m.dialFailures, m.dialsActive, m.clientAuth)
}

// Results a connection can end with, for creating the series at 0.
var (
	// routedResults end a connection after a route was chosen.
	routedResults = []string{resultOK, resultNoUpstream, resultUpstreamError, resultIdle, resultClientError, resultShutdown,
		resultTLSVersion, resultNoCipher, resultNameRefused, resultMintLimit, resultDialLimit, resultClientCert, resultAnswerCheck}
	// unroutedResults end one before (route ""), on every listener.
	unroutedResults = []string{resultNotTLS, resultPlainHTTP, resultTimeout, resultTooLarge, resultBadHello,
		resultUnknownSNI, resultBadSNI, resultDenied, resultLimit, resultClientLimit, resultHandshakeLimit, resultProxyHeader, resultClientError, resultShutdown}
	// connectResults end one on a CONNECT listener before a route was chosen.
	connectResults = []string{resultBadRequest, resultBadMethod, resultForbidden, resultSNIMismatch}
)

// InitListener creates at 0 the snigate_connections_total series of
// connections that end unrouted on listener (its address, the listener
// label), with the CONNECT results too when connect is set. Call it once
// the listener is open, so that increase() sees the first failure.
func (m *Metrics) InitListener(listener string, connect bool) {
	if m == nil {
		return
	}
	metricvec.Init(m.connections.WithLabelValues, []string{listener, ""}, unroutedResults...)
	if connect {
		metricvec.Init(m.connections.WithLabelValues, []string{listener, ""}, connectResults...)
	}
}

// InitRoute creates at 0 the series of route whose label values are known
// when it is built: connections per listener and routed result, bytes both
// ways, active connections, the two histograms, and dial failures per
// upstream. DeleteRoute removes them with the route.
func (m *Metrics) InitRoute(route string, upstreams, listeners []string) {
	if m == nil {
		return
	}
	for _, ln := range listeners {
		metricvec.Init(m.connections.WithLabelValues, []string{ln, route}, routedResults...)
	}
	metricvec.Init(m.bytes.WithLabelValues, []string{route}, DirectionUpstream, DirectionDownstream)
	m.active.WithLabelValues(route).Add(0)
	m.dialsActive.WithLabelValues(route).Add(0)
	m.connectSeconds.WithLabelValues(route)
	m.durationSecs.WithLabelValues(route)
	metricvec.Init(m.dialFailures.WithLabelValues, []string{route}, upstreams...)
}

// InitClientAuth creates at 0 the snigate_client_auth_failures_total
// series of route, one per reason; call it for routes with ClientAuth.
// DeleteRoute removes them with the route.
func (m *Metrics) InitClientAuth(route string) {
	if m == nil {
		return
	}
	metricvec.Init(m.clientAuth.WithLabelValues, []string{route}, clientAuthReasons...)
}

// DeleteClientAuth removes those series when a reload took client_ca
// off a route that stays.
func (m *Metrics) DeleteClientAuth(route string) {
	if m != nil {
		metricvec.DeleteRoute(route, m.clientAuth)
	}
}

func (m *Metrics) clientAuthFailure(route, reason string) {
	if m != nil {
		m.clientAuth.WithLabelValues(route, reason).Inc()
	}
}

// DeleteUpstream removes the dial failure series of an upstream that a
// reload took out of route (the route stays).
func (m *Metrics) DeleteUpstream(route, upstream string) {
	if m == nil {
		return
	}
	m.dialFailures.DeleteLabelValues(route, upstream)
}

// ended counts a connection that ended with result; rm is its route's
// series, nil when it ended unrouted.
func (m *Metrics) ended(rm *routeMetrics, listener, result string) {
	switch {
	case m == nil:
	case rm != nil:
		rm.ended.inc(m.connections, listener, rm.route, result)
	default:
		m.unrouted.inc(m.connections, listener, "", result)
	}
}

func (m *Metrics) clientHello(d time.Duration) {
	if m != nil {
		m.helloSeconds.Observe(d.Seconds())
	}
}

// pendingHandshake moves the pending gauge of a kind of listener.
func (m *Metrics) pendingHandshake(kind string, delta float64) {
	switch {
	case m == nil:
	case kind == kindConnect:
		m.pendingByKind[1].Add(delta)
	default:
		m.pendingByKind[0].Add(delta)
	}
}

func (m *Metrics) dialFailure(route, upstream string) {
	if m != nil {
		m.dialFailures.WithLabelValues(route, upstream).Inc()
	}
}

// routeMetrics are one route's series, resolved once so that the per-chunk
// byte counting of a tunnel costs one atomic add.
type routeMetrics struct {
	owner    *Metrics
	up, down prometheus.Counter
	active   prometheus.Gauge
	connect  prometheus.Observer
	duration prometheus.Observer
	dials    prometheus.Gauge
	route    string
	ended    endedCounters
}

// routeMetricsCache holds a route's resolved series for one *Metrics.
type routeMetricsCache struct{ p atomic.Pointer[routeMetrics] }

// forRoute returns r's series; nil when m is nil.
func (m *Metrics) forRoute(r *Route) *routeMetrics {
	if m == nil {
		return nil
	}
	if rm := r.metrics.p.Load(); rm != nil && rm.owner == m {
		return rm
	}
	rm := &routeMetrics{
		owner:    m,
		up:       m.bytes.WithLabelValues(r.Name, DirectionUpstream),
		down:     m.bytes.WithLabelValues(r.Name, DirectionDownstream),
		active:   m.active.WithLabelValues(r.Name),
		connect:  m.connectSeconds.WithLabelValues(r.Name),
		duration: m.durationSecs.WithLabelValues(r.Name),
		dials:    m.dialsActive.WithLabelValues(r.Name),
		route:    r.Name,
	}
	r.metrics.p.Store(rm)
	return rm
}

func (rm *routeMetrics) addBytes(dir string, n int64) {
	if rm == nil || n <= 0 {
		return
	}
	if dir == DirectionUpstream {
		rm.up.Add(float64(n))
	} else {
		rm.down.Add(float64(n))
	}
}

func (rm *routeMetrics) activeInc() {
	if rm != nil {
		rm.active.Inc()
	}
}

func (rm *routeMetrics) activeDec() {
	if rm != nil {
		rm.active.Dec()
	}
}

func (rm *routeMetrics) dialStarted() {
	if rm != nil {
		rm.dials.Inc()
	}
}

func (rm *routeMetrics) dialEnded() {
	if rm != nil {
		rm.dials.Dec()
	}
}
