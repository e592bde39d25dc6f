package regauth

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the regauth package's Prometheus series. Build them once per
// process with NewMetrics and share them across routes and reloads. A nil
// *Metrics is valid and records nothing.
type Metrics struct {
	tokens *prometheus.CounterVec // route, result
}

var tokenResults = []string{ResultFetched, ResultCached, ResultRefused, ResultError}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, still usable).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_http_auth_tokens_total",
			Help: "Token lookups of auth routes: fetched from the token service, cached (a cached token, or one another request was fetching), refused (the registry refused the gateway's credentials), error (no token for another reason).",
		}, []string{"route", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.tokens)
	}
	return m
}

// InitRoute creates route's counters at 0 so that increase() sees the
// first event.
func (m *Metrics) InitRoute(route string) {
	if m == nil {
		return
	}
	for _, r := range tokenResults {
		m.tokens.WithLabelValues(route, r)
	}
}

// DeleteRoute removes every series labelled with route; call it for
// routes that a reload removed.
func (m *Metrics) DeleteRoute(route string) {
	if m != nil {
		m.tokens.DeletePartialMatch(prometheus.Labels{"route": route})
	}
}

func (m *Metrics) token(route, result string) {
	if m != nil {
		m.tokens.WithLabelValues(route, result).Inc()
	}
}
