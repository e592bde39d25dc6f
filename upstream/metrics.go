package upstream

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/metricvec"
)

// Metrics holds the upstream series. Build it once per process with
// NewMetrics and hand it to every generation of pools: the series survive
// reloads. A nil *Metrics is valid and records nothing.
//
// Series are created when a pool starts (Run), changes state or adopts
// hosts; snigate_upstream_checks_total then starts at 0 for both results,
// so that increase() sees the first failure. Pool.Adopt deletes the series of hosts a route no longer has; when
// a whole route is removed, the gateway calls DeleteRoute after that route's
// last Run has returned.
type Metrics struct {
	up     *prometheus.GaugeVec
	checks *prometheus.CounterVec
	state  *prometheus.GaugeVec
}

var allStates = [...]State{StateReady, StateDrain, StateMaint}

// NewMetrics creates the upstream metrics and registers them with reg
// (nil: not registered, for tests). It panics if they are already
// registered there, like prometheus.MustRegister.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snigate_upstream_up",
			Help: "Whether the upstream passes its health checks (1) or not (0).",
		}, []string{"route", "upstream"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_upstream_checks_total",
			Help: "Active health checks run, by result (ok or fail).",
		}, []string{"route", "upstream", "result"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snigate_upstream_state",
			Help: "Administrative state of the upstream: 1 for the current state (ready, drain or maint).",
		}, []string{"route", "upstream", "state"}),
	}
	if reg != nil {
		reg.MustRegister(m.up, m.checks, m.state)
	}
	return m
}

// DeleteRoute deletes every series of route.
func (m *Metrics) DeleteRoute(route string) {
	if m == nil {
		return
	}
	metricvec.DeleteRoute(route, m.up, m.checks, m.state)
}

// DeleteUpstream deletes every series of one upstream of route.
func (m *Metrics) DeleteUpstream(route, upstream string) {
	if m == nil {
		return
	}
	metricvec.DeleteMatch(prometheus.Labels{"route": route, "upstream": upstream}, m.up, m.checks, m.state)
}

func (m *Metrics) setUp(route, upstream string, healthy bool) {
	if m == nil {
		return
	}
	v := 0.0
	if healthy {
		v = 1
	}
	m.up.WithLabelValues(route, upstream).Set(v)
}

func (m *Metrics) setState(route, upstream string, s State) {
	if m == nil {
		return
	}
	for _, st := range allStates {
		v := 0.0
		if st == s {
			v = 1
		}
		m.state.WithLabelValues(route, upstream, string(st)).Set(v)
	}
}

func (m *Metrics) countCheck(route, upstream, result string) {
	if m == nil {
		return
	}
	m.checks.WithLabelValues(route, upstream, result).Inc()
}

// checkResults are the values of snigate_upstream_checks_total's result.
var checkResults = [...]string{"ok", "fail"}

// initChecks creates the check counters of one upstream at 0.
func (m *Metrics) initChecks(route, upstream string) {
	if m == nil {
		return
	}
	metricvec.Init(m.checks.WithLabelValues, []string{route, upstream}, checkResults[:]...)
}

// publish sets the gauges of h from its current state and creates its
// check counters.
func (p *Pool) publish(h *Host) {
	s := h.snapshot()
	p.cfg.Metrics.setUp(p.Route(), h.addr, s.health.Up())
	p.cfg.Metrics.setState(p.Route(), h.addr, s.state)
	p.cfg.Metrics.initChecks(p.Route(), h.addr)
}
