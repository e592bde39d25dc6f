package admin

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snigate/snigate/internal/metricvec"
	"github.com/snigate/snigate/upstream"
)

// Metrics are the admin listener's own series. Build them once per process
// with NewMetrics; a nil *Metrics is valid and records nothing.
type Metrics struct {
	requests     *prometheus.CounterVec // handler, code
	stateChanges *prometheus.CounterVec // route, state
	connShedVec  *prometheus.CounterVec // reason
}

// NewMetrics registers the admin metrics with reg (nil: not registered, but
// still usable):
//
//	snigate_admin_requests_total{handler,code}
//	snigate_admin_state_changes_total{route,state}
//	snigate_admin_connections_shed_total{reason}
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_admin_requests_total",
			Help: "Requests to the admin listener, by handler pattern and HTTP status code.",
		}, []string{"handler", "code"}),
		stateChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_admin_state_changes_total",
			Help: "Upstream states set through the runtime API, by route and new state.",
		}, []string{"route", "state"}),
		connShedVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_admin_connections_shed_total",
			Help: "Admin connections shed at the connection limit, by reason: waiting_closed (a connection waiting without a request closed to make room), client_refused (its address at its share), limit_refused (cap and reserve full), reserved (admitted past the cap for /healthz and /readyz only).",
		}, []string{"reason"}),
	}
	for _, r := range []string{shedWaiting, shedClient, shedLimit, shedReserve} {
		m.connShedVec.WithLabelValues(r).Add(0)
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.stateChanges, m.connShedVec)
	}
	return m
}

// instrument counts the requests h answers under the label handler.
func (m *Metrics) instrument(handler string, h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	c := m.requests.MustCurryWith(prometheus.Labels{"handler": handler})
	return promhttp.InstrumentHandlerCounter(c, h)
}

// InitRoute creates route's state change counters at 0, one per state, so
// that increase() sees the first change. DeleteRoute removes them.
func (m *Metrics) InitRoute(route string) {
	if m == nil {
		return
	}
	metricvec.Init(m.stateChanges.WithLabelValues, []string{route},
		string(upstream.StateReady), string(upstream.StateDrain), string(upstream.StateMaint))
}

func (m *Metrics) stateChanged(route, state string) {
	if m == nil {
		return
	}
	m.stateChanges.WithLabelValues(route, state).Inc()
}

// DeleteRoute drops the series of a route removed by a reload.
func (m *Metrics) DeleteRoute(route string) {
	if m == nil {
		return
	}
	metricvec.DeleteRoute(route, m.stateChanges)
}

func (m *Metrics) connShed(reason string) {
	if m == nil {
		return
	}
	m.connShedVec.WithLabelValues(reason).Inc()
}
