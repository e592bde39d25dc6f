package sni

import (
	"crypto/tls"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"io"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
)

// seriesOf returns name -> label sets (as "k=v,k=v,") gathered from reg.
func seriesOf(tb testing.TB, reg prometheus.Gatherer) map[string][]string {
	tb.Helper()
	out := map[string][]string{}
	for _, s := range testkit.AllSeries(tb, reg) {
		labels := s.LabelString()
		if labels != "" {
			labels += ","
		}
		out[s.Name] = append(out[s.Name], labels)
	}
	return out
}

func gaugeValue(tb testing.TB, g *prometheus.GaugeVec, labels ...string) float64 {
	return testkit.Value(tb, g.WithLabelValues(labels...))
}

func TestMetricsContract(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	w := newWorld(t, Config{}, "", registryRoute(t, closedAddr(t), sinkUpstream(t).addr))
	c := w.dial(t)
	c.Write(hello)
	if got := string(readAtMost(t, c, 2)); got != "ok" {
		t.Fatalf("tunnel: %q", got)
	}
	if a := gaugeValue(t, w.m.active, "registry"); a != 1 {
		t.Errorf("snigate_active_connections during a tunnel = %v, want 1", a)
	}
	c.Close()
	w.logs.wait(t, "msg=connection", "result=ok")
	if a := gaugeValue(t, w.m.active, "registry"); a != 0 {
		t.Errorf("snigate_active_connections after = %v, want 0", a)
	}
	junk := w.dial(t)
	junk.Write([]byte("junk!"))
	io.ReadAll(junk)
	w.logs.wait(t, "msg=connection", "result=not_tls")

	series := seriesOf(t, w.reg)
	for _, name := range []string{
		"snigate_connections_total", "snigate_active_connections", "snigate_bytes_total",
		"snigate_upstream_connect_seconds", "snigate_client_hello_seconds",
		"snigate_connection_duration_seconds", "snigate_upstream_dial_failures_total",
	} {
		if len(series[name]) == 0 {
			t.Errorf("metric %s missing; have %v", name, series)
		}
	}
	wantConn := []string{
		"listener=" + w.addr + ",result=ok,route=registry,",
		"listener=" + w.addr + ",result=not_tls,route=,",
	}
	for _, l := range wantConn {
		if !slices.Contains(series["snigate_connections_total"], l) {
			t.Errorf("snigate_connections_total has %v, want %s", series["snigate_connections_total"], l)
		}
	}
	if got := w.counter(t, w.m.bytes, "registry", DirectionUpstream); got != float64(len(hello)) {
		t.Errorf("bytes upstream = %v, want %d", got, len(hello))
	}

	w.m.DeleteRoute("registry")
	for name, ls := range seriesOf(t, w.reg) {
		for _, l := range ls {
			if l == "route=registry," || containsLabel(l, "route=registry,") {
				t.Errorf("%s{%s} survived DeleteRoute", name, l)
			}
		}
	}
}

func containsLabel(set, l string) bool {
	for i := 0; i+len(l) <= len(set); i++ {
		if set[i:i+len(l)] == l && (i == 0 || set[i-1] == ',') {
			return true
		}
	}
	return false
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.ended(nil, "l", "ok")
	m.clientHello(0)
	m.dialFailure("r", "u")
	m.DeleteRoute("r")
	if m.forRoute(&Route{Name: "r"}) != nil {
		t.Error("nil Metrics resolved route series")
	}
	var rm *routeMetrics
	rm.addBytes(DirectionUpstream, 10)
}

func TestEndedCountsSurviveARouteReAdded(t *testing.T) {
	m := NewMetrics(nil)
	count := func(route, result string) float64 {
		return testutil.ToFloat64(m.connections.WithLabelValues("l", route, result))
	}
	r := &Route{Name: "r"}
	m.ended(m.forRoute(r), "l", "ok")
	m.ended(m.forRoute(r), "l", "ok")
	m.ended(nil, "l", "unknown_sni")
	if got := count("r", "ok"); got != 2 {
		t.Fatalf("route r ok = %v, want 2", got)
	}
	if got := count("", "unknown_sni"); got != 1 {
		t.Fatalf("unrouted unknown_sni = %v, want 1", got)
	}
	// A reload removes r (its series go) and a later one adds it back:
	// the new Route's connections must be counted in the new series, not
	// in the deleted children a cache might still hold.
	m.DeleteRoute("r")
	r2 := &Route{Name: "r"}
	m.ended(m.forRoute(r2), "l", "ok")
	if got := count("r", "ok"); got != 1 {
		t.Fatalf("re-added route r ok = %v, want 1", got)
	}
}
