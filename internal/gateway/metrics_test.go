package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/upstream"
)

// bridgeConfig: a bridge route to an mTLS upstream, the DNS responder and
// the admin API.
const bridgeConfig = `listen:
  tls: ["127.0.0.1:0"]
  dns: "127.0.0.1:0"
  admin: "127.0.0.1:0"
dns:
  answer: ["127.0.0.1"]
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%q]
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
`

// contractMetrics are the metric names the contract fixes.
var contractMetrics = []string{
	"snigate_connections_total",
	"snigate_active_connections",
	"snigate_bytes_total",
	"snigate_upstream_up",
	"snigate_upstream_connect_seconds",
	"snigate_client_hello_seconds",
	"snigate_dns_queries_total",
	"snigate_certificate_expiry_timestamp_seconds",
	"snigate_config_reloads_total",
}

func newBridgeWorld(t *testing.T) (*world, *echoServer) {
	w := newWorld(t, "")
	up := startEcho(t, w.leaf("registry.test"), w.ca.Pool())
	if _, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test"); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(bridgeConfig, up.addr()))
	w.start()
	return w, up
}

// TestMetricsContract: after a bridged connection and a DNS query, every
// metric of the contract is exported, and the series move with traffic.
func TestMetricsContract(t *testing.T) {
	w, _ := newBridgeWorld(t)
	c, err := w.dialTLS("registry.test")
	if err != nil {
		t.Fatal(err)
	}
	echoRoundTrip(t, c, "0123456789")
	_, during := w.adminGet("/metrics")
	c.Close()

	m := new(dns.Msg)
	m.SetQuestion("registry.test.", dns.TypeA)
	if _, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, w.addrs.DNS.String()); err != nil {
		t.Fatalf("DNS query: %v", err)
	}
	// The finished connection is counted when its tunnel is torn down.
	var text string
	testkit.Poll(t, "the connection to be counted", func() bool {
		_, text = w.adminGet("/metrics")
		return strings.Contains(text, `snigate_connections_total{`)
	})
	for _, name := range contractMetrics {
		if !strings.Contains(text, "\n"+name) {
			t.Errorf("metric %s missing from /metrics", name)
		}
	}
	for _, want := range []string{
		`snigate_active_connections{route="registry"} 1`,
	} {
		if !strings.Contains(during, want) {
			t.Errorf("during the connection: want %s in\n%s", want, grepLines(during, "active"))
		}
	}
	for _, want := range []string{
		`snigate_upstream_up{route="registry",upstream="` + w.g.gen.Load().cfg.Routes[0].Upstreams[0] + `"} 1`,
		`snigate_certificate_expiry_timestamp_seconds{role="serve",route="registry"}`,
		`snigate_certificate_expiry_timestamp_seconds{role="client",route="registry"}`,
		`snigate_bytes_total{direction="upstream",route="registry"}`,
		`snigate_bytes_total{direction="downstream",route="registry"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("want %s in /metrics", want)
		}
	}
	if strings.Contains(text, `snigate_bytes_total{direction="upstream",route="registry"} 0`) {
		t.Errorf("bytes did not move:\n%s", grepLines(text, "snigate_bytes_total"))
	}
}

// TestAdminAPIOverGateway: the runtime API lists the route's upstream and
// takes it out of rotation.
func TestAdminAPIOverGateway(t *testing.T) {
	w, up := newBridgeWorld(t)
	code, body := w.adminGet("/api/upstreams")
	var list []upstream.Status
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Fatalf("/api/upstreams = %d %s (%v)", code, body, err)
	}
	if len(list) != 1 || list[0].Route != "registry" || list[0].Upstream != up.addr() || !list[0].Healthy {
		t.Fatalf("/api/upstreams = %+v", list)
	}
	running, err := w.dialTLS("registry.test")
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	echoRoundTrip(t, running, "before drain")
	for _, state := range []upstream.State{upstream.StateDrain, upstream.StateMaint} {
		st, err := w.g.SetUpstreamState("registry", up.addr(), state)
		if err != nil || st.State != state || st.ActiveConnections != 1 {
			t.Fatalf("SetUpstreamState(%s) = %+v, %v; want the state and 1 active connection", state, st, err)
		}
		if c, err := w.dialTLS("registry.test"); err == nil {
			c.Close()
			t.Errorf("a new connection was bridged to an upstream in %s", state)
		}
		echoRoundTrip(t, running, "the running transfer continues in "+string(state))
	}
	if _, err := w.g.SetUpstreamState("nosuch", up.addr(), "ready"); err == nil {
		t.Error("unknown route accepted")
	}
	if _, err := w.g.SetUpstreamState("registry", "10.9.9.9:443", "ready"); err == nil {
		t.Error("unknown upstream accepted")
	}
}
