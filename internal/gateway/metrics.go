package gateway

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/httpverify"
	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/regauth"
	"github.com/snigate/snigate/regcache"
	"github.com/snigate/snigate/s3tier"
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
	admin    *admin.Metrics
	http     *httpbridge.Metrics
	cache    *regcache.Metrics
	auth     *regauth.Metrics // routes[].http.auth: snigate_http_auth_tokens_total
	verify   *httpverify.Metrics
	shared   *s3tier.Metrics

	reloads         *prometheus.CounterVec
	reloadOK        prometheus.Gauge
	reloadOKSeconds prometheus.Gauge
	ready           prometheus.Gauge
}

func newMetrics(reg *prometheus.Registry) *metrics {
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newBuildInfo(),
	)
	m := &metrics{
		sni:      sni.NewMetrics(reg),
		upstream: upstream.NewMetrics(reg),
		certs:    certs.NewMetrics(reg),
		dns:      dnsresponder.NewMetrics(reg),
		admin:    admin.NewMetrics(reg),
		http:     httpbridge.NewMetrics(reg),
		cache:    regcache.NewMetrics(reg),
		auth:     regauth.NewMetrics(reg),
		verify:   httpverify.NewMetrics(reg),
		shared:   s3tier.NewMetrics(reg),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snigate_config_reloads_total",
			Help: "Configuration reloads by result (success, failure).",
		}, []string{"result"}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snigate_config_last_reload_successful",
			Help: "1 when the last configuration load (at start, or the last reload) succeeded, 0 when it was rejected.",
		}),
		reloadOKSeconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snigate_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load (at start, or the last good reload).",
		}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snigate_ready",
			Help: "1 while the gateway's listeners are up and it is not draining.",
		}),
	}
	reg.MustRegister(m.reloads, m.reloadOK, m.reloadOKSeconds, m.ready)
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	return m
}

// configLoaded records a configuration put in force at t: at start (as
// Prometheus does for its own) and at every good reload.
func (m *metrics) configLoaded(t time.Time) {
	m.reloadOK.Set(1)
	m.reloadOKSeconds.Set(float64(t.UnixNano()) / 1e9) // as Gauge.SetToCurrentTime
}

// reloaded records the outcome of one reload attempt at t.
func (m *metrics) reloaded(err error, t time.Time) {
	if err != nil {
		m.reloads.WithLabelValues("failure").Inc()
		m.reloadOK.Set(0)
		return
	}
	m.reloads.WithLabelValues("success").Inc()
	m.configLoaded(t)
}

// listenerLabels are the listener label values of the open listeners.
type listenerLabels struct {
	tls     []string
	connect string // "": no CONNECT listener
}

// labels returns the listener label values of ls, as package sni sets
// them: each listener's address.
func (ls *listeners) labels() listenerLabels {
	var l listenerLabels
	for _, ln := range ls.tls {
		l.tls = append(l.tls, ln.Addr().String())
	}
	if ls.connect != nil {
		l.connect = ls.connect.Addr().String()
	}
	return l
}

func (l listenerLabels) all() []string {
	if l.connect == "" {
		return l.tls
	}
	return append(slices.Clone(l.tls), l.connect)
}

// initListeners creates at 0 the series of connections that end before a
// route is chosen, per open listener.
func (m *metrics) initListeners(l listenerLabels) {
	for _, ln := range l.tls {
		m.sni.InitListener(ln, false)
	}
	if l.connect != "" {
		m.sni.InitListener(l.connect, true)
	}
}

// initRoutes creates at 0 the series of cfg's routes whose label values
// are known when they are built (the upstream, certificate and DNS
// forwarder series are created by their packages as they build): a first
// failure is then visible to increase().
func (m *metrics) initRoutes(cfg *config.Config, l listenerLabels) {
	listeners := l.all()
	for _, r := range cfg.Routes {
		m.sni.InitRoute(r.Name, r.Upstreams, listeners)
		m.admin.InitRoute(r.Name)
		if r.Serve.ClientCA != "" {
			m.sni.InitClientAuth(r.Name)
		}
		if hasAuth(r) {
			m.auth.InitRoute(r.Name)
		}
	}
}

// hasAuth: the route has http.auth (the gateway's registry credentials).
func hasAuth(r config.Route) bool { return r.HTTP != nil && r.HTTP.Auth != nil }

// prune drops, after a reload from old to cur, the series of the routes
// cur no longer has and the dial failure series of upstreams a kept route
// no longer has (the pools delete their own).
func (m *metrics) prune(old, cur *config.Config) {
	kept := make(map[string][]string, len(cur.Routes)) // route -> upstreams
	clientAuthKept := make(map[string]bool)
	authKept := make(map[string]bool)
	verifyKept := make(map[string]bool)
	for _, r := range cur.Routes {
		kept[r.Name] = r.Upstreams
		clientAuthKept[r.Name] = r.Serve.ClientCA != ""
		authKept[r.Name] = hasAuth(r)
		verifyKept[r.Name] = hasVerify(r)
	}
	for _, r := range old.Routes {
		ups, ok := kept[r.Name]
		if !ok {
			m.deleteRoute(r.Name)
			continue
		}
		if hasVerify(r) && !verifyKept[r.Name] {
			m.verify.DeleteRoute(r.Name)
		}
		if r.Serve.ClientCA != "" && !clientAuthKept[r.Name] {
			m.sni.DeleteClientAuth(r.Name)
		}
		if hasAuth(r) && !authKept[r.Name] {
			m.auth.DeleteRoute(r.Name)
		}
		for _, u := range r.Upstreams {
			if !slices.Contains(ups, u) {
				m.sni.DeleteUpstream(r.Name, u)
			}
		}
	}
}

// deleteRoute drops the series of a route that a reload removed.
func (m *metrics) deleteRoute(route string) {
	m.sni.DeleteRoute(route)
	m.upstream.DeleteRoute(route)
	m.certs.DeleteRoute(route)
	m.admin.DeleteRoute(route)
	m.http.DeleteRoute(route)
	m.auth.DeleteRoute(route)
	m.verify.DeleteRoute(route)
}
