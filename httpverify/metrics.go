package httpverify

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the package's Prometheus series, built once per process
// with NewMetrics and shared by every route and reload. A nil *Metrics
// records nothing.
type Metrics struct {
	decisions *prometheus.CounterVec // route, result
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, still usable).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "snigate_verify_total",
		Help: "Manifest and blob requests decided by the signature policy (routes[].http.verify), by result: verified, unsigned, invalid, skipped, error.",
	}, []string{"route", "result"})}
	if reg != nil {
		reg.MustRegister(m.decisions)
	}
	return m
}

// InitRoute creates a route's series at 0.
func (m *Metrics) InitRoute(route string) {
	if m == nil {
		return
	}
	for _, r := range Results {
		m.decisions.WithLabelValues(route, r)
	}
}

// DeleteRoute drops a route's series (a reload removed the route or its
// verify section).
func (m *Metrics) DeleteRoute(route string) {
	if m == nil {
		return
	}
	m.decisions.DeletePartialMatch(prometheus.Labels{"route": route})
}

func (m *Metrics) count(route, result string) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(route, result).Inc()
}
