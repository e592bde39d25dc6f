package config

import (
	"crypto/tls"
	"errors"
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// parseInDir parses yaml as dir/snigate.yaml and returns its error lines
// with dir/ removed.
func parseInDir(t *testing.T, dir, yaml string) []string {
	t.Helper()
	_, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(yaml))
	return errorLines(t, dir, err)
}

// parseInDirLocal is parseInDir on a host whose interfaces have the
// addresses local.
func parseInDirLocal(t *testing.T, dir, yaml string, local ...netip.Addr) []string {
	t.Helper()
	file := filepath.Join(dir, "snigate.yaml")
	p := &parser{file: file, dir: absDir(file), now: time.Now(), localAddrsFunc: func() []netip.Addr { return local }}
	_, err := parse(p, []byte(yaml))
	return errorLines(t, dir, err)
}

// errorLines are the lines of err, an ErrorList, dir left out of them.
func errorLines(t *testing.T, dir string, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %T is not an ErrorList: %v", err, err)
	}
	return strings.Split(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), "\n")
}

func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	for _, tc := range slices.Concat(errorCases, runtimeFaultCases, notYAMLCases) {
		t.Run(tc.name, func(t *testing.T) {
			got := parseInDir(t, dir, tc.yaml)
			if len(got) == 0 {
				t.Fatalf("Parse succeeded; want errors:\n%s", strings.Join(tc.want, "\n"))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// fullExample is the example of the interface document with real files
// (relative to the configuration file), keeping its check: tls next to
// path and expect_status (accepted: --probe uses them); plus a splice route
// that relies on every default.
const fullExample = `listen:
  tls: [":443", "[::]:8443"]
  connect: ":3128"
  dns: ":53"
  admin: "127.0.0.1:9090"
  allow: ["10.0.0.0/8", "192.168.1.7"]
  proxy_protocol_from: []

timeouts:
  client_hello: 5s
  connect: 4s
  idle: 1h30m
  drain: 30s

max_connections: 20000

dns:
  answer: ["192.0.2.10", "2001:db8::10"]
  ttl: 45s
  forward: ["10.96.0.10:53", "10.96.0.11", "[2001:db8::53]"]
  names: [Mirror.Example.com.]

default_route: ""

routes:
  - name: registry
    sni: ["registry.example.com", "*.registry.example.com"]
    mode: bridge
    upstreams: ["10.1.0.10:443", "registry-2.internal:443"]
    balance: leastconn
    proxy_protocol: ""
    health:
      check: tls
      path: /v2/
      expect_status: [200, 401]
      interval: 3s
      timeout: 2s
      fall: 3
      rise: 2
    serve:
      cert: serve.crt
      key: serve.key
    upstream_tls:
      cert: client.crt
      key: client.key
      ca: ca.crt
      server_name: ""
  - name: git
    sni: [Git.Example.com]
    mode: splice
    upstreams: ["10.2.0.1:443"]
    proxy_protocol: v2
  - name: minted
    sni: [minted.example.com]
    mode: bridge
    upstreams: ["10.3.0.1:443"]
    serve: {ca_cert: ca.crt, ca_key: ca.key, key_exchanges: [X25519, x25519mlkem768]}
    upstream_tls: {server_name: Upstream.Example.com, key_exchanges: [X25519]}
`

// fullExampleWant is the Config Parse makes of fullExample with its files
// in dir (lines aside).
func fullExampleWant(dir string) *Config {
	in := func(name string) string { return filepath.Join(dir, name) }
	return &Config{
		File: filepath.Join(dir, "snigate.yaml"),
		Listen: Listen{
			TLS:     []string{":443", "[::]:8443"},
			Connect: ":3128", DNS: ":53", Admin: "127.0.0.1:9090",
			Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32")},
		},
		Timeouts:       Timeouts{ClientHello: 5 * time.Second, Connect: 4 * time.Second, Idle: 90 * time.Minute, FirstRequest: DefaultFirstRequest, Drain: 30 * time.Second},
		MaxConnections: 20000,
		// absent: the defaults (a quarter of 20000 is above the cap)
		MaxConnectionsPerClient: DefaultMaxConnectionsPerClient,
		MaxHandshakes:           DefaultMaxHandshakesCap,
		Log:                     Log{Access: DefaultAccessLog},
		DNS: DNS{
			Answer:  []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")},
			TTL:     45 * time.Second,
			Forward: []string{"10.96.0.10:53", "10.96.0.11:53", "[2001:db8::53]:53"},
			Names:   []string{"mirror.example.com"},
		},
		Routes: []Route{{
			Name: "registry", Line: 26,
			SNI:       []string{"registry.example.com", "*.registry.example.com"},
			SNIKeys:   []string{"routes[0].sni[0]", "routes[0].sni[1]"},
			Mode:      ModeBridge,
			Upstreams: []string{"10.1.0.10:443", "registry-2.internal:443"},
			Balance:   BalanceLeastConn,
			Health: Health{Check: CheckTLS, Path: "/v2/", ExpectStatus: []int{200, 401},
				Interval: 3 * time.Second, Timeout: 2 * time.Second, Fall: 3, Rise: 2},
			Serve:       Serve{Cert: in("serve.crt"), Key: in("serve.key")},
			UpstreamTLS: UpstreamTLS{Cert: in("client.crt"), Key: in("client.key"), CA: in("ca.crt")},
			MaxDials:    DefaultMaxDials, MaxDialsPerClient: DefaultMaxDialsPerClient, DialRatePerClient: DefaultDialRatePerClient,
		}, {
			Name: "git", Line: 48,
			SNI: []string{"git.example.com"}, SNIKeys: []string{"routes[1].sni[0]"}, Mode: ModeSplice, Upstreams: []string{"10.2.0.1:443"},
			Balance: BalanceRoundRobin, ProxyProtocol: ProxyProtocolV2,
			Health: Health{Check: CheckTCP, Path: DefaultHealthPath, ExpectStatus: DefaultExpectStatus(), Interval: DefaultHealthInterval, Timeout: DefaultHealthTimeout,
				Fall: DefaultHealthFall, Rise: DefaultHealthRise},
		}, {
			Name: "minted", Line: 53,
			SNI: []string{"minted.example.com"}, SNIKeys: []string{"routes[2].sni[0]"}, Mode: ModeBridge, Upstreams: []string{"10.3.0.1:443"},
			Balance: BalanceRoundRobin,
			Health: Health{Check: CheckTLS, Path: DefaultHealthPath, ExpectStatus: DefaultExpectStatus(), Interval: DefaultHealthInterval, Timeout: DefaultHealthTimeout,
				Fall: DefaultHealthFall, Rise: DefaultHealthRise},
			Serve:       Serve{CACert: in("ca.crt"), CAKey: in("ca.key"), KeyExchanges: []tls.CurveID{tls.X25519, tls.X25519MLKEM768}},
			UpstreamTLS: UpstreamTLS{ServerName: "upstream.example.com", KeyExchanges: []tls.CurveID{tls.X25519}},
			MaxDials:    DefaultMaxDials, MaxDialsPerClient: DefaultMaxDialsPerClient, DialRatePerClient: DefaultDialRatePerClient,
		}},
	}
}

func TestParseFullExample(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(fullExample))
	if err != nil {
		t.Fatal(err)
	}
	want := fullExampleWant(dir)
	want.lines = c.lines // the positions ErrorAt reads; TestErrorAt checks them
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", c, want)
	}
	if !c.Routes[2].Serve.Minting() || c.Routes[0].Serve.Minting() {
		t.Error("Serve.Minting: want true for ca_cert/ca_key only")
	}
	wantNames := []string{"registry.example.com", "*.registry.example.com", "git.example.com", "minted.example.com", "mirror.example.com"}
	if got := c.RoutedNames(); !slices.Equal(got, wantNames) {
		t.Errorf("RoutedNames() = %q, want %q", got, wantNames)
	}
}

func TestParseDefaults(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	tests := []struct {
		name string
		yaml string
		want Health
	}{
		{name: "splice", yaml: minimalSplice, want: Health{Check: CheckTCP}},
		{name: "bridge", yaml: minimalBridge, want: Health{Check: CheckTLS}},
		{name: "http check", yaml: minimalSplice + "    health: {check: http}\n",
			want: Health{Check: CheckHTTP, Path: DefaultHealthPath, ExpectStatus: DefaultExpectStatus()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			wantTimeouts := Timeouts{ClientHello: DefaultClientHelloTimeout, Connect: DefaultConnectTimeout,
				Idle: DefaultIdleTimeout, FirstRequest: DefaultFirstRequest, Drain: DefaultDrainTimeout}
			if c.Timeouts != wantTimeouts {
				t.Errorf("Timeouts = %+v, want %+v", c.Timeouts, wantTimeouts)
			}
			if c.MaxConnections != DefaultMaxConnections || c.DNS.TTL != DefaultDNSTTL || c.DefaultRoute != "" {
				t.Errorf("MaxConnections %d, DNS.TTL %v, DefaultRoute %q: want defaults", c.MaxConnections, c.DNS.TTL, c.DefaultRoute)
			}
			r := c.Routes[0]
			if r.Balance != DefaultBalance || r.ProxyProtocol != "" || r.Line != 4 {
				t.Errorf("Balance %q, ProxyProtocol %q, Line %d: want %q, \"\", 4", r.Balance, r.ProxyProtocol, r.Line, DefaultBalance)
			}
			want := tc.want
			if want.Path == "" {
				want.Path, want.ExpectStatus = DefaultHealthPath, DefaultExpectStatus()
			}
			want.Interval, want.Timeout, want.Fall, want.Rise = DefaultHealthInterval, DefaultHealthTimeout, DefaultHealthFall, DefaultHealthRise
			if !reflect.DeepEqual(r.Health, want) {
				t.Errorf("Health = %+v, want %+v", r.Health, want)
			}
		})
	}
}

// Regression: timeout equal to interval was rejected ("want less than
// health.interval"), though HAProxy, Envoy and Kubernetes probes accept it
// and the health loop never overlaps two checks of one upstream.
func TestHealthTimeoutUpToInterval(t *testing.T) {
	tests := []struct {
		name              string
		health            string
		interval, timeout time.Duration
	}{
		{name: "equal", health: "{interval: 1s, timeout: 1s}", interval: time.Second, timeout: time.Second},
		{name: "below", health: "{interval: 5s, timeout: 1s}", interval: 5 * time.Second, timeout: time.Second},
		{name: "equal to the default interval", health: "{timeout: 3s}", interval: DefaultHealthInterval, timeout: 3 * time.Second},
		{name: "equal to the default timeout", health: "{interval: 2s}", interval: 2 * time.Second, timeout: DefaultHealthTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(filepath.Join(t.TempDir(), "snigate.yaml"), []byte(minimalSplice+"    health: "+tc.health+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if h := c.Routes[0].Health; h.Interval != tc.interval || h.Timeout != tc.timeout {
				t.Errorf("interval %v, timeout %v; want %v, %v", h.Interval, h.Timeout, tc.interval, tc.timeout)
			}
		})
	}
}

func TestDefaultExpectStatusIsFresh(t *testing.T) {
	a := DefaultExpectStatus()
	a[0] = 999
	if b := DefaultExpectStatus(); b[0] != 200 {
		t.Errorf("DefaultExpectStatus() = %v after a caller changed a result; want [200 401]", b)
	}
}

func TestAliasesAreFollowed(t *testing.T) {
	yaml := `listen:
  tls: &addrs [":443"]
  connect: ":3128"
routes:
  - name: a
    sni: [a.example.com]
    mode: splice
    upstreams: &ups ["10.0.0.1:443", "10.0.0.2:443"]
  - name: b
    sni: [b.example.com]
    mode: splice
    upstreams: *ups
    health: {interval: *addrs}
`
	got := parseInDir(t, t.TempDir(), yaml)
	// The error points at the alias, where the value is used.
	want := []string{`snigate.yaml:13: routes[1].health.interval: want a duration such as "3s", got a list`}
	if !slices.Equal(got, want) {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c, err := Parse("snigate.yaml", []byte(strings.Replace(yaml, "    health: {interval: *addrs}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Routes[1].Upstreams, c.Routes[0].Upstreams) {
		t.Errorf("aliased upstreams = %q, want %q", c.Routes[1].Upstreams, c.Routes[0].Upstreams)
	}
}

// routes[].max_dials, max_dials_per_client and dial_rate_per_client:
// bridge defaults, values set (0: no rate limit), nothing on splice
// routes.
func TestParseDialBounds(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	tests := []struct {
		name                      string
		yaml                      string
		perRoute, perClient, rate int
	}{
		{name: "bridge defaults", yaml: minimalBridge, perRoute: DefaultMaxDials, perClient: DefaultMaxDialsPerClient, rate: DefaultDialRatePerClient},
		{name: "bridge set", yaml: minimalBridge + "    max_dials: 200\n    max_dials_per_client: 2\n    dial_rate_per_client: 5\n", perRoute: 200, perClient: 2, rate: 5},
		{name: "no rate limit", yaml: minimalBridge + "    dial_rate_per_client: 0\n", perRoute: DefaultMaxDials, perClient: DefaultMaxDialsPerClient},
		{name: "splice", yaml: minimalSplice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if r := c.Routes[0]; r.MaxDials != tc.perRoute || r.MaxDialsPerClient != tc.perClient || r.DialRatePerClient != tc.rate {
				t.Errorf("MaxDials %d, MaxDialsPerClient %d, DialRatePerClient %d; want %d, %d, %d",
					r.MaxDials, r.MaxDialsPerClient, r.DialRatePerClient, tc.perRoute, tc.perClient, tc.rate)
			}
		})
	}
}

// TestSNINamesCanonical: route names with capitals and a trailing dot are
// accepted and stored canonical (the contract: case-insensitive, trailing
// dot ignored).
func TestSNINamesCanonical(t *testing.T) {
	yaml := `listen:
  tls: [":443"]
routes:
  - name: r
    sni: ["Registry.Example.COM.", "*.Mirror.Example.com."]
    mode: splice
    upstreams: ["10.0.0.1:443"]
`
	c, err := Parse("snigate.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"registry.example.com", "*.mirror.example.com"}; !slices.Equal(c.Routes[0].SNI, want) {
		t.Errorf("SNI = %q, want %q", c.Routes[0].SNI, want)
	}
}
