package gateway

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/buildinfo"
	"github.com/snigate/snigate/internal/testkit"
)

// fullConfig exercises every package's series: a TLS and a CONNECT
// listener, the DNS responder with a forwarder, the admin API, and a bridge
// route that mints its serving certificates, requires node certificates
// and verifies its upstream against a CA bundle. %[1]q: the upstream,
// %[2]q: the DNS forwarder.
const fullConfig = `listen:
  tls: ["127.0.0.1:0"]
  connect: "127.0.0.1:0"
  dns: "127.0.0.1:0"
  admin: "127.0.0.1:0"
dns:
  answer: ["127.0.0.1"]
  forward: [%[2]q]
  answer_check: {port: 1}
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%[1]q]
    serve: {ca_cert: ca.crt, ca_key: ca.key, client_ca: ca.crt}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
`

// forwarderAddr is a DNS forwarder the tests never query.
const forwarderAddr = "127.0.0.1:1"

func newFullWorld(t *testing.T) (*world, *echoServer) {
	t.Helper()
	w := newWorld(t, "")
	up := startEcho(t, w.leaf("registry.test"), w.ca.Pool())
	w.writeConfig(fmt.Sprintf(fullConfig, up.addr(), forwarderAddr))
	w.start()
	return w, up
}

// scrape returns /metrics once the pools have published their upstreams
// (Run publishes them as it starts, after the gateway reports ready), and
// the answer check its addresses when there is one.
func (w *world) scrape() string {
	w.t.Helper()
	var text string
	testkit.Poll(w.t, "the upstream series", func() bool {
		_, text = w.adminGet("/metrics")
		checked := w.g.gen.Load().answers == nil || strings.Contains(text, "\nsnigate_dns_answer_up{")
		return strings.Contains(text, "\nsnigate_upstream_checks_total{") && checked
	})
	return text
}

// Regression: failure counters appeared at their first increment, so
// increase() (and every alert built on it) missed the first failure. On a
// fresh gateway that has served nothing, the series of every failure whose
// labels are known up front are on /metrics at 0.
func TestFreshGatewayExportsFailureSeriesAtZero(t *testing.T) {
	w, up := newFullWorld(t)
	text := w.scrape()
	tlsLn, connectLn := w.addrs.TLS[0].String(), w.addrs.Connect.String()
	var want []string
	for _, r := range []string{"unknown_sni", "not_tls", "plain_http", "timeout", "bad_hello", "denied", "limit"} {
		want = append(want, fmt.Sprintf(`snigate_connections_total{listener=%q,result=%q,route=""} 0`, tlsLn, r))
	}
	for _, r := range []string{"forbidden", "bad_request", "sni_mismatch"} {
		want = append(want, fmt.Sprintf(`snigate_connections_total{listener=%q,result=%q,route=""} 0`, connectLn, r))
	}
	for _, ln := range []string{tlsLn, connectLn} {
		for _, r := range []string{"ok", "no_upstream", "upstream_error", "idle_timeout"} {
			want = append(want, fmt.Sprintf(`snigate_connections_total{listener=%q,result=%q,route="registry"} 0`, ln, r))
		}
	}
	want = append(want,
		fmt.Sprintf(`snigate_upstream_dial_failures_total{route="registry",upstream=%q} 0`, up.addr()),
		fmt.Sprintf(`snigate_upstream_checks_total{result="fail",route="registry",upstream=%q} 0`, up.addr()),
		`snigate_bytes_total{direction="downstream",route="registry"} 0`,
		`snigate_active_connections{route="registry"} 0`,
		`snigate_upstream_connect_seconds_count{route="registry"} 0`,
		`snigate_certificate_reload_failures_total{role="client",route="registry"} 0`,
		`snigate_certificate_reload_failures_total{role="serve_ca",route="registry"} 0`,
		`snigate_certificate_reload_failures_total{role="upstream_ca",route="registry"} 0`,
		`snigate_certificate_mints_total{result="error",route="registry"} 0`,
		`snigate_certificate_mints_total{result="refused",route="registry"} 0`,
		`snigate_certificate_reload_failures_total{role="client_ca",route="registry"} 0`,
		`snigate_client_auth_failures_total{reason="no_certificate",route="registry"} 0`,
		`snigate_client_auth_failures_total{reason="revoked",route="registry"} 0`,
		fmt.Sprintf(`snigate_dns_upstream_requests_total{result="timeout",upstream=%q} 0`, forwarderAddr),
		fmt.Sprintf(`snigate_dns_upstream_requests_total{result="error",upstream=%q} 0`, forwarderAddr),
		`snigate_dns_queries_total{qtype="A",result="servfail"} 0`,
		`snigate_dns_queries_total{qtype="AAAA",result="refused"} 0`,
		`snigate_dns_tcp_connections_refused_total 0`,
		`snigate_dns_tcp_connections_evicted_total 0`,
		`snigate_dns_queries_total{qtype="A",result="denied"} 0`,
		`snigate_admin_state_changes_total{route="registry",state="maint"} 0`,
		`snigate_config_reloads_total{result="failure"} 0`,
		`snigate_config_last_reload_successful 1`,
	)
	for _, line := range want {
		if !strings.Contains(text, "\n"+line+"\n") {
			t.Errorf("fresh gateway: want %s on /metrics; it has:\n%s", line, grepLines(text, strings.SplitN(line, "{", 2)[0]))
		}
	}
}

// metricNames finds the snigate_ series names a document mentions.
var metricNames = regexp.MustCompile(`snigate_[a-z_]+[a-z]`)

// Regression: internal/admin/README.md documented
// snigate_admin_requests_total and snigate_admin_state_changes_total, but
// the gateway never gave the admin server its metrics, so neither was ever
// exported. Every series a package README documents is on /metrics.
func TestDocumentedSeriesAreExported(t *testing.T) {
	w, _ := newFullWorld(t)
	if code, _ := w.adminGet("/healthz"); code != 200 { // an admin request to count
		t.Fatalf("/healthz = %d", code)
	}
	text := w.scrape()
	for _, doc := range []string{"../admin/README.md", "../../sni/README.md", "../../upstream/README.md",
		"../../dnsresponder/README.md", "../certs/README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		names := slices.Compact(slices.Sorted(slices.Values(metricNames.FindAllString(string(b), -1))))
		if len(names) == 0 {
			t.Errorf("%s documents no series", doc)
		}
		for _, name := range names {
			if !strings.Contains(text, "\n# TYPE "+name+" ") {
				t.Errorf("%s documents %s, which /metrics does not export", doc, name)
			}
		}
	}
}

// TestConfigReloadGauges: snigate_config_last_reload_successful is 1 from
// the start, 0 after a rejected reload and 1 again after the next good one;
// the success timestamp is set at start and moves only on success. An
// alert on the gauge resolves at the next good reload, unlike one on
// increase(snigate_config_reloads_total{result="failure"}[10m]).
func TestConfigReloadGauges(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	good := fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr()))
	w.writeConfig(good)
	before := time.Now().Unix()
	w.start()
	steps := []struct {
		name, config string
		wantOK       string
		wantTSMoves  bool
	}{
		{name: "at start", wantOK: "1", wantTSMoves: true},
		{name: "rejected reload", config: "listen: {tls: [\"127.0.0.1:0\"]}\nroutes: [{name: a, mode: sideways}]\n", wantOK: "0"},
		{name: "good reload", config: good + "    balance: leastconn\n", wantOK: "1", wantTSMoves: true},
	}
	var lastTS float64
	for _, s := range steps {
		if s.config != "" {
			w.writeConfig(s.config)
			w.g.Reload(t.Context(), "test")
			<-w.reloaded
		}
		_, text := w.adminGet("/metrics")
		if got := gaugeValue(t, text, "snigate_config_last_reload_successful"); got != s.wantOK {
			t.Errorf("%s: snigate_config_last_reload_successful = %s, want %s", s.name, got, s.wantOK)
		}
		ts, err := strconv.ParseFloat(gaugeValue(t, text, "snigate_config_last_reload_success_timestamp_seconds"), 64)
		if err != nil {
			t.Fatal(err)
		}
		if moved := ts != lastTS; moved != s.wantTSMoves || ts < float64(before) || ts > float64(time.Now().Unix()+1) {
			t.Errorf("%s: success timestamp %f (was %f, test started %d): want moved = %v, within the test", s.name, ts, lastTS, before, s.wantTSMoves)
		}
		lastTS = ts
	}
}

// gaugeValue returns the value of the unlabelled series name in text.
func gaugeValue(t *testing.T, text, name string) string {
	t.Helper()
	for l := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+" "); ok {
			return v
		}
	}
	t.Fatalf("no %s on /metrics", name)
	return ""
}

// TestReloadDropsSeriesOfRemovedRoutesAndUpstreams: the series created at
// 0 for a route go with it when a reload removes it, and a kept route's
// dial failure series go with an upstream it no longer has.
func TestReloadDropsSeriesOfRemovedRoutesAndUpstreams(t *testing.T) {
	w := newWorld(t, "")
	a, b := startEcho(t, w.leaf("a.test"), nil), startEcho(t, w.leaf("b.test"), nil)
	two := strings.Replace(spliceRoute("a", "a.test", a.addr()), fmt.Sprintf("[%q]", a.addr()),
		fmt.Sprintf("[%q, %q]", a.addr(), b.addr()), 1)
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", two+spliceRoute("gone", "gone.test", b.addr())))
	w.start()
	_, text := w.adminGet("/metrics")
	for _, s := range []string{`route="gone"`, fmt.Sprintf(`snigate_upstream_dial_failures_total{route="a",upstream=%q} 0`, b.addr())} {
		if !strings.Contains(text, s) {
			t.Fatalf("before the reload: want %s on /metrics", s)
		}
	}
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	_, text = w.adminGet("/metrics")
	for _, s := range []string{`route="gone"`, fmt.Sprintf(`snigate_upstream_dial_failures_total{route="a",upstream=%q}`, b.addr())} {
		if strings.Contains(text, s) {
			t.Errorf("after the reload: %s is still on /metrics:\n%s", s, grepLines(text, s))
		}
	}
	if want := fmt.Sprintf(`snigate_upstream_dial_failures_total{route="a",upstream=%q} 0`, a.addr()); !strings.Contains(text, want) {
		t.Errorf("after the reload: want %s (kept upstream)", want)
	}
}

// TestBuildInfoExported: snigate_build_info is 1, labelled with this
// binary's build.
func TestBuildInfoExported(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())))
	w.start()
	_, text := w.adminGet("/metrics")
	v, r, g := buildLabels(buildinfo.Get())
	want := fmt.Sprintf(`snigate_build_info{goversion=%q,revision=%q,version=%q} 1`, g, r, v)
	if !strings.Contains(text, "\n"+want+"\n") {
		t.Errorf("want %s on /metrics, have:\n%s", want, grepLines(text, "snigate_build_info"))
	}
}
