package certs

import (
	"crypto/x509"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/metricvec"
)

// Roles label the certificates this package watches, in metrics and logs.
const (
	RoleServe      = "serve"       // serve.cert/key: the certificate nodes see
	RoleClient     = "client"      // upstream_tls.cert/key: the edge client certificate
	RoleServeCA    = "serve_ca"    // serve.ca_cert/ca_key: the CA a Minter signs with
	RoleUpstreamCA = "upstream_ca" // upstream_tls.ca: the bundle upstreams are verified against
	RoleClientCA   = "client_ca"   // serve.client_ca: the bundle node client certificates must chain to
	RoleClientCRL  = "client_crl"  // serve.client_crl: the CRL that revokes node certificates (expiry: its NextUpdate)
)

// Metrics are the certificate series. Build them once per process with
// NewMetrics and share them between reloads; a nil *Metrics is valid and
// records nothing.
type Metrics struct {
	expiry   *prometheus.GaugeVec   // route, role
	reloads  *prometheus.CounterVec // route, role
	failures *prometheus.CounterVec // route, role
	mints    *prometheus.CounterVec // route, result
}

// NewMetrics registers the certificate metrics with reg (nil: not
// registered, but still usable):
//
//	snigate_certificate_expiry_timestamp_seconds{route,role}
//	snigate_certificate_reloads_total{route,role}
//	snigate_certificate_reload_failures_total{route,role}
//	snigate_certificate_mints_total{route,result}   result: ok | refused | error
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		expiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snigate_certificate_expiry_timestamp_seconds",
			Help: "NotAfter of the certificate in use, as Unix seconds (for a CA bundle or minted leaves: the earliest).",
		}, []string{"route", "role"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_certificate_reloads_total",
			Help: "Certificate files re-read after a change on disk that put a different certificate in use.",
		}, []string{"route", "role"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_certificate_reload_failures_total",
			Help: "Failed attempts to re-read certificate files (or to watch them); the last good certificate stays in use.",
		}, []string{"route", "role"}),
		mints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_certificate_mints_total",
			Help: "Leaf certificates minted per SNI name from serve.ca_cert, by result.",
		}, []string{"route", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.expiry, m.reloads, m.failures, m.mints)
	}
	return m
}

// DeleteRoute drops every series of a route removed by a reload.
func (m *Metrics) DeleteRoute(route string) {
	if m == nil {
		return
	}
	metricvec.DeleteRoute(route, m.expiry, m.reloads, m.failures, m.mints)
}

// mintResults are the values of snigate_certificate_mints_total's result.
var mintResults = [...]string{"ok", "refused", "error"}

// setExpiry publishes the NotAfter of the certificate in use for route and
// role. Every watched file sets it when it is first loaded, so it also
// creates that file's reload counters at 0 (and, for a minter's CA, the
// mint counters): increase() then sees the first failure.
func (m *Metrics) setExpiry(route, role string, notAfter time.Time) {
	if m == nil {
		return
	}
	m.expiry.WithLabelValues(route, role).Set(float64(notAfter.Unix()))
	m.reloads.WithLabelValues(route, role).Add(0)
	m.failures.WithLabelValues(route, role).Add(0)
	if role == RoleServeCA {
		metricvec.Init(m.mints.WithLabelValues, []string{route}, mintResults[:]...)
	}
}

func (m *Metrics) deleteExpiry(route, role string) {
	if m == nil {
		return
	}
	m.expiry.DeleteLabelValues(route, role)
}

func (m *Metrics) reloaded(route, role string) {
	if m == nil {
		return
	}
	m.reloads.WithLabelValues(route, role).Inc()
}

func (m *Metrics) reloadFailed(route, role string) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(route, role).Inc()
}

func (m *Metrics) minted(route, result string) {
	if m == nil {
		return
	}
	m.mints.WithLabelValues(route, result).Inc()
}

// earliestExpiry is the first NotAfter among certs (zero for none).
func earliestExpiry(certs []*x509.Certificate) time.Time {
	var t time.Time
	for _, c := range certs {
		if t.IsZero() || c.NotAfter.Before(t) {
			t = c.NotAfter
		}
	}
	return t
}
