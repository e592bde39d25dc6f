package s3tier

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds the snigate_cache_shared_* series. Build it once per
// process with NewMetrics and give it to every Tier; the series survive
// reloads. A nil *Metrics is valid and records nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	bytes    *prometheus.CounterVec
}

// The results of snigate_cache_shared_requests_total.
const (
	resultHit   = "hit"   // content read from the bucket and verified
	resultMiss  = "miss"  // not in the bucket
	resultError = "error" // the bucket failed (or held a corrupt object): going on without it
)

// The directions of snigate_cache_shared_bytes_total.
const (
	directionRead    = "read"
	directionWritten = "written"
)

// NewMetrics creates the shared tier's metrics and registers them with reg
// (nil: not registered, for tests). It panics if they are already
// registered there.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snigate_cache_shared_requests_total",
			Help: "Lookups of content in the shared cache tier, by result: hit, miss or error."}, []string{"route", "result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snigate_cache_shared_bytes_total",
			Help: "Bytes of content read from or written to the shared cache tier."}, []string{"route", "direction"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.bytes)
	}
	return m
}

// InitRoute creates route's series at 0 (New calls it).
func (m *Metrics) InitRoute(route string) {
	m.forRoute(route)
}

// DeleteRoute deletes route's series; the gateway calls it when a route
// loses its shared tier, after the Tier is closed.
func (m *Metrics) DeleteRoute(route string) {
	if m == nil {
		return
	}
	m.requests.DeletePartialMatch(prometheus.Labels{"route": route})
	m.bytes.DeletePartialMatch(prometheus.Labels{"route": route})
}

// routeMetrics are one route's series (zero: nothing recorded), plus the
// tier's own running totals for Stats.
type routeMetrics struct {
	hit, miss, errs, read, written prometheus.Counter
	totals                         *totals
}

// totals are the tier's figures for snigate ctl cache.
type totals struct {
	hit, miss, errs, read, written atomic.Int64
}

func (m *Metrics) forRoute(route string) routeMetrics {
	rm := routeMetrics{totals: &totals{}}
	if m == nil {
		return rm
	}
	rm.hit = m.requests.WithLabelValues(route, resultHit)
	rm.miss = m.requests.WithLabelValues(route, resultMiss)
	rm.errs = m.requests.WithLabelValues(route, resultError)
	rm.read = m.bytes.WithLabelValues(route, directionRead)
	rm.written = m.bytes.WithLabelValues(route, directionWritten)
	return rm
}

func (rm routeMetrics) requests(result string) {
	switch result {
	case resultHit:
		rm.totals.hit.Add(1)
		inc(rm.hit, 1)
	case resultMiss:
		rm.totals.miss.Add(1)
		inc(rm.miss, 1)
	default:
		rm.totals.errs.Add(1)
		inc(rm.errs, 1)
	}
}

func (rm routeMetrics) bytesRead(n int64) {
	rm.totals.read.Add(n)
	inc(rm.read, float64(n))
}

func (rm routeMetrics) bytesWritten(n int64) {
	rm.totals.written.Add(n)
	inc(rm.written, float64(n))
}

func inc(c prometheus.Counter, v float64) {
	if c != nil && v > 0 {
		c.Add(v)
	}
}

// Stats are the tier's figures since it was built (snigate ctl cache).
type Stats struct {
	Route        string `json:"route"`
	Endpoint     string `json:"endpoint"`
	Bucket       string `json:"bucket"`
	Prefix       string `json:"prefix"`
	Hits         int64  `json:"hits"`
	Misses       int64  `json:"misses"`
	Errors       int64  `json:"errors"`
	BytesRead    int64  `json:"bytes_read"`
	BytesWritten int64  `json:"bytes_written"`
	LastError    string `json:"last_error,omitempty"`
}

// Stats returns the tier's figures.
func (t *Tier) Stats() Stats {
	tt := t.m.totals
	t.warnMu.Lock()
	last := t.lastErr
	t.warnMu.Unlock()
	return Stats{Route: t.cfg.Route, Endpoint: t.cfg.Endpoint, Bucket: t.cfg.Bucket, Prefix: t.cfg.Prefix,
		Hits: tt.hit.Load(), Misses: tt.miss.Load(), Errors: tt.errs.Load(),
		BytesRead: tt.read.Load(), BytesWritten: tt.written.Load(), LastError: last}
}
