package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// metrics holds every package's metrics, built once per process so that
// series survive reloads.
type metrics struct {
	sni      *sni.Metrics
	upstream *upstream.Metrics
	certs    *certs.Metrics
	dns      *dnsresponder.Metrics

	reloads *prometheus.CounterVec
	ready   prometheus.Gauge
}

func newMetrics(reg *prometheus.Registry) *metrics {
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m := &metrics{
		sni:      sni.NewMetrics(reg),
		upstream: upstream.NewMetrics(reg),
		certs:    certs.NewMetrics(reg),
		dns:      dnsresponder.NewMetrics(reg),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_config_reloads_total",
			Help: "Configuration reloads by result (success, failure).",
		}, []string{"result"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snigate_ready",
			Help: "1 while the gateway's listeners are up and it is not draining.",
		}),
	}
	reg.MustRegister(m.reloads, m.ready)
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	return m
}

// deleteRoute drops the series of a route that a reload removed.
func (m *metrics) deleteRoute(route string) {
	m.sni.DeleteRoute(route)
	m.upstream.DeleteRoute(route)
	m.certs.DeleteRoute(route)
}
