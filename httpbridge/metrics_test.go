package httpbridge

import (
	"io"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRemovedRouteSeriesStayDeleted: a request that a removed route's
// bridge finishes after the reload deleted the route's series creates
// none again. The bug: the request path looked its series up by label
// on every request, so the last blob of a removed route brought back
// snigate_http_requests_in_flight{route} at -1 and a requests counter
// that nothing would delete.
func TestRemovedRouteSeriesStayDeleted(t *testing.T) {
	p := newTestPKI(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	up := startUpstream(t, p.upstreamTLS("http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		_, _ = io.WriteString(w, "{}")
	}))
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	done := make(chan error, 1)
	go func() {
		resp, err := w.node(t, "http/1.1").Get("https://" + registryName + "/v2/team/app/manifests/v1")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		done <- err
	}()
	<-arrived
	w.m.DeleteRoute("registry") // the reload removed the route
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.audit.wait(t, 1) // written after the request's metrics
	for _, s := range routeSeries(t, w.reg, "registry") {
		t.Errorf("series of the removed route: %s", s)
	}
}

// routeSeries names the gathered series labelled route.
func routeSeries(t *testing.T, reg *prometheus.Registry, route string) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && l.GetValue() == route {
					out = append(out, mf.GetName()+" "+m.String())
				}
			}
		}
	}
	return out
}
