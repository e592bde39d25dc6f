// Package metricvec holds the two moves every package's metrics.go makes
// on its Prometheus vectors when routes come and go: create a route's
// series at 0 when it is built (so that increase() sees the first event)
// and delete them when a reload removed it.
//
// Usage:
//
//	metricvec.Init(m.refused.WithLabelValues, []string{route}, reasons...)
//	metricvec.DeleteRoute(route, m.requests, m.duration, m.refused)
package metricvec

import "github.com/prometheus/client_golang/prometheus"

// RouteLabel is the label that names a route.
const RouteLabel = "route"

// Vec is a Prometheus vector (*prometheus.CounterVec, GaugeVec,
// HistogramVec, SummaryVec) as far as deleting series goes.
type Vec interface {
	DeletePartialMatch(prometheus.Labels) int
}

// Init creates one series per value in last, each labelled with lead
// followed by that value, through with (a vector's WithLabelValues):
// counters and gauges at 0, histograms empty. With no last value it
// creates none.
func Init[M any](with func(...string) M, lead []string, last ...string) {
	lvs := make([]string, len(lead)+1)
	copy(lvs, lead)
	for _, v := range last {
		lvs[len(lead)] = v
		with(lvs...)
	}
}

// DeleteMatch removes from each vector every series whose labels include
// all of l.
func DeleteMatch(l prometheus.Labels, vecs ...Vec) {
	for _, v := range vecs {
		v.DeletePartialMatch(l)
	}
}

// DeleteRoute removes from each vector every series labelled with route.
func DeleteRoute(route string, vecs ...Vec) {
	DeleteMatch(prometheus.Labels{RouteLabel: route}, vecs...)
}
