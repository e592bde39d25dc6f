package snigate

import (
	"errors"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/dnsresponder"
)

// Values of the result label of coredns_snigate_config_reloads_total.
const (
	resultSuccess = "success"
	resultFailure = "failure"
)

// Metrics are the plugin's Prometheus series. A nil *Metrics records
// nothing.
type Metrics struct {
	answers *prometheus.CounterVec      // server, qtype
	reloads *prometheus.CounterVec      // result
	up      *dnsresponder.AnswerMetrics // AnswerMetricName
}

// AnswerMetricName is the answer check's gauge in CoreDNS: 1 while an
// answer address passes the check, 0 once it failed, by address.
const AnswerMetricName = plugin.Namespace + "_" + pluginName + "_answer_up"

// NewMetrics registers the plugin's series with reg (CoreDNS's prometheus
// plugin serves prometheus.DefaultRegisterer). Calling it again with the
// same reg, as every server block and every Corefile reload does, returns
// the series already registered; nil reg registers nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: plugin.Namespace,
			Subsystem: pluginName,
			Name:      "answers_total",
			Help:      "Queries for routed names that snigate answered itself, by query type.",
		}, []string{"server", "qtype"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: plugin.Namespace,
			Subsystem: pluginName,
			Name:      "config_reloads_total",
			Help:      "Re-reads of the snigate configuration file after it changed, by result (success, failure).",
		}, []string{"result"}),
	}
	if reg != nil {
		m.answers = register(reg, m.answers)
		m.reloads = register(reg, m.reloads)
	}
	m.up = dnsresponder.NewAnswerMetrics(reg, AnswerMetricName)
	return m
}

// register registers c, or returns the collector already registered in
// its place.
func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
			return existing
		}
	}
	return c
}

func (m *Metrics) answered(server string, qtype uint16) {
	if m == nil {
		return
	}
	m.answers.WithLabelValues(server, qtypeLabel(qtype)).Inc()
}

// answerMetrics is the check's gauge; nil for a nil *Metrics.
func (m *Metrics) answerMetrics() *dnsresponder.AnswerMetrics {
	if m == nil {
		return nil
	}
	return m.up
}

func (m *Metrics) reloaded(result string) {
	if m == nil {
		return
	}
	m.reloads.WithLabelValues(result).Inc()
}

// qtypeLabel keeps the qtype label to a small set: the types clients ask
// a registry name for, and "other".
func qtypeLabel(qtype uint16) string {
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeHTTPS, dns.TypeSVCB, dns.TypeCNAME, dns.TypeMX, dns.TypeTXT, dns.TypeANY:
		return dns.TypeToString[qtype]
	}
	return "other"
}
