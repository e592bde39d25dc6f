package regcache

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/metricvec"
)

// Metrics holds every snigate_cache_* series, those the store moves and
// snigate_cache_requests_total, which the HTTP bridge counts through
// Cache.CountRequest (so that one place registers them all). Build it once
// per process with NewMetrics and give it to every Cache; the series
// survive reloads. A nil *Metrics is valid and records nothing.
type Metrics struct {
	requests      *prometheus.CounterVec
	bytes         *prometheus.GaugeVec
	entries       *prometheus.GaugeVec
	upstreamBytes *prometheus.CounterVec
	fills         *prometheus.CounterVec
	errors        *prometheus.CounterVec
	corrupt       *prometheus.CounterVec
	evictedBytes  *prometheus.CounterVec
}

// NewMetrics creates the cache metrics and registers them with reg (nil:
// not registered, for tests). It panics if they are already registered
// there, like prometheus.MustRegister.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: counter("snigate_cache_requests_total",
			"Requests for cacheable content, by result: hit, miss, bypass or offline.", "result"),
		bytes:   gauge("snigate_cache_bytes", "Bytes of content stored in the cache."),
		entries: gauge("snigate_cache_entries", "Digests stored in the cache."),
		upstreamBytes: counter("snigate_cache_upstream_bytes_total",
			"Bytes fetched from upstream to fill the cache."),
		fills: counter("snigate_cache_fills_total",
			"Fills from upstream, by result: ok (verified; stored unless larger than max_size) or failed.", "result"),
		errors: counter("snigate_cache_errors_total",
			"Cache failures that made a request bypass the cache, by reason: nospace, unwritable or io.", "reason"),
		corrupt: counter("snigate_cache_corrupt_total",
			"Stored files that failed verification before serving (removed, fetched again)."),
		evictedBytes: counter("snigate_cache_evicted_bytes_total",
			"Bytes removed to stay within max_size."),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.bytes, m.entries, m.upstreamBytes, m.fills,
			m.errors, m.corrupt, m.evictedBytes)
	}
	return m
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help},
		append([]string{"route"}, labels...))
}

func gauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"route"})
}

// DeleteRoute deletes every series of route; the gateway calls it when a
// route with a cache is removed, after its Cache is closed.
func (m *Metrics) DeleteRoute(route string) {
	if m == nil {
		return
	}
	metricvec.DeleteRoute(route, m.requests, m.bytes, m.entries, m.upstreamBytes, m.fills, m.errors, m.corrupt, m.evictedBytes)
}

// routeMetrics are one route's series, resolved once when its Cache opens.
// The zero value (no Metrics) records nothing.
type routeMetrics struct {
	requests      map[Result]prometheus.Counter
	bytes         prometheus.Gauge
	entries       prometheus.Gauge
	upstreamBytes prometheus.Counter
	fillsOK       prometheus.Counter
	fillsFailed   prometheus.Counter
	errors        map[string]prometheus.Counter
	corrupt       prometheus.Counter
	evictedBytes  prometheus.Counter
}

// forRoute creates route's series, counters at 0 so that increase() sees
// the first one.
func (m *Metrics) forRoute(route string) routeMetrics {
	if m == nil {
		return routeMetrics{}
	}
	r := routeMetrics{
		requests:      map[Result]prometheus.Counter{},
		bytes:         m.bytes.WithLabelValues(route),
		entries:       m.entries.WithLabelValues(route),
		upstreamBytes: m.upstreamBytes.WithLabelValues(route),
		fillsOK:       m.fills.WithLabelValues(route, "ok"),
		fillsFailed:   m.fills.WithLabelValues(route, "failed"),
		errors:        map[string]prometheus.Counter{},
		corrupt:       m.corrupt.WithLabelValues(route),
		evictedBytes:  m.evictedBytes.WithLabelValues(route),
	}
	for _, res := range results {
		r.requests[res] = m.requests.WithLabelValues(route, string(res))
	}
	for _, reason := range faultReasons {
		r.errors[reason] = m.errors.WithLabelValues(route, reason)
	}
	return r
}

func addCounter(c prometheus.Counter, v float64) {
	if c != nil {
		c.Add(v)
	}
}

func setGauge(g prometheus.Gauge, v float64) {
	if g != nil {
		g.Set(v)
	}
}
