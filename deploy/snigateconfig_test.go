package deploy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// gatewayConfig mirrors the configuration file of the interface document
// (the contract: docs/configuration.md and docs/operations.md), key for key, so that a strict decode
// rejects a misspelt or invented key in any example this tree ships.
type gatewayConfig struct {
	Listen         listenConfig  `json:"listen"`
	Timeouts       timeoutConfig `json:"timeouts"`
	MaxConnections *int          `json:"max_connections,omitempty"`
	DNS            *dnsConfig    `json:"dns,omitempty"`
	DefaultRoute   string        `json:"default_route"`
	Routes         []routeConfig `json:"routes"`
}

type listenConfig struct {
	TLS               []string `json:"tls"`
	Connect           string   `json:"connect"`
	DNS               string   `json:"dns"`
	Admin             string   `json:"admin"`
	Allow             []string `json:"allow"`
	ProxyProtocolFrom []string `json:"proxy_protocol_from"`
}

type timeoutConfig struct {
	ClientHello string `json:"client_hello"`
	Connect     string `json:"connect"`
	Idle        string `json:"idle"`
	Drain       string `json:"drain"`
}

type dnsConfig struct {
	Answer      []string           `json:"answer"`
	TTL         string             `json:"ttl"`
	Forward     []string           `json:"forward"`
	Names       []string           `json:"names"`
	AnswerCheck *answerCheckConfig `json:"answer_check,omitempty"`
}

type answerCheckConfig struct {
	Port     int    `json:"port"`
	Interval string `json:"interval"`
	Timeout  string `json:"timeout"`
	Fall     int    `json:"fall"`
	Rise     int    `json:"rise"`
}

type routeConfig struct {
	Name          string        `json:"name"`
	SNI           []string      `json:"sni"`
	Mode          string        `json:"mode"`
	Upstreams     []string      `json:"upstreams"`
	Balance       string        `json:"balance"`
	ProxyProtocol string        `json:"proxy_protocol"`
	Health        *healthConfig `json:"health,omitempty"`
	Serve         *serveConfig  `json:"serve,omitempty"`
	UpstreamTLS   *upTLSConfig  `json:"upstream_tls,omitempty"`
}

type healthConfig struct {
	Check        string `json:"check"`
	Path         string `json:"path"`
	ExpectStatus []int  `json:"expect_status"`
	Interval     string `json:"interval"`
	Timeout      string `json:"timeout"`
	Fall         int    `json:"fall"`
	Rise         int    `json:"rise"`
}

type serveConfig struct {
	Cert   string `json:"cert"`
	Key    string `json:"key"`
	CACert string `json:"ca_cert"`
	CAKey  string `json:"ca_key"`
	// Node identity (the contract routes[].serve.client_ca).
	ClientCA    string   `json:"client_ca"`
	ClientNames []string `json:"client_names"`
	ClientCRL   string   `json:"client_crl"`
}

type upTLSConfig struct {
	Cert       string `json:"cert"`
	Key        string `json:"key"`
	CA         string `json:"ca"`
	ServerName string `json:"server_name"`
}

// Defaults from the interface document.
const (
	defaultDrain          = 30 * time.Second
	defaultMaxConnections = 10000
)

// parseGatewayConfig decodes strictly (unknown keys and wrong types are
// errors) and checks what the deployment files depend on.
func parseGatewayConfig(data []byte) (*gatewayConfig, error) {
	var c gatewayConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("snigate.yaml: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *gatewayConfig) drain() time.Duration {
	if c.Timeouts.Drain == "" {
		return defaultDrain
	}
	d, _ := time.ParseDuration(c.Timeouts.Drain) // validated
	return d
}

func (c *gatewayConfig) maxConnections() int {
	if c.MaxConnections == nil {
		return defaultMaxConnections
	}
	return *c.MaxConnections
}

// routedNames are every route's SNI patterns plus dns.names, lower case.
func (c *gatewayConfig) routedNames() []string {
	var names []string
	for _, r := range c.Routes {
		for _, n := range r.SNI {
			names = append(names, strings.ToLower(strings.TrimSuffix(n, ".")))
		}
	}
	if c.DNS != nil {
		for _, n := range c.DNS.Names {
			names = append(names, strings.ToLower(strings.TrimSuffix(n, ".")))
		}
	}
	return names
}

// isRouted reports whether host matches a routed name (exact or one-label wildcard).
func (c *gatewayConfig) isRouted(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, p := range c.routedNames() {
		if p == host {
			return true
		}
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			if label, parent, found := strings.Cut(host, "."); found && label != "" && parent == rest {
				return true
			}
		}
	}
	return false
}

func (c *gatewayConfig) validate() error {
	if len(c.Listen.TLS) == 0 {
		return fmt.Errorf("listen.tls: want at least one address")
	}
	for _, a := range append(append([]string{}, c.Listen.TLS...), c.Listen.Connect, c.Listen.DNS) {
		if a == "" {
			continue
		}
		if _, err := listenPort(a); err != nil {
			return err
		}
	}
	if err := validateAdmin(c.Listen.Admin); err != nil {
		return err
	}
	for _, p := range append(append([]string{}, c.Listen.Allow...), c.Listen.ProxyProtocolFrom...) {
		if _, err := netip.ParsePrefix(p); err != nil {
			return fmt.Errorf("listen: want a CIDR such as 10.0.0.0/8, got %q", p)
		}
	}
	if err := c.validateDurations(); err != nil {
		return err
	}
	if c.MaxConnections != nil && *c.MaxConnections <= 0 {
		return fmt.Errorf("max_connections: want a positive number, got %d", *c.MaxConnections)
	}
	if err := c.validateDNS(); err != nil {
		return err
	}
	return c.validateRoutes()
}

func validateAdmin(a string) error {
	if a == "" || strings.HasPrefix(a, "unix:/") {
		return nil
	}
	_, err := listenPort(a)
	return err
}

func (c *gatewayConfig) validateDurations() error {
	ds := map[string]string{
		"timeouts.client_hello": c.Timeouts.ClientHello, "timeouts.connect": c.Timeouts.Connect,
		"timeouts.idle": c.Timeouts.Idle, "timeouts.drain": c.Timeouts.Drain,
	}
	if c.DNS != nil {
		ds["dns.ttl"] = c.DNS.TTL
	}
	for _, r := range c.Routes {
		if r.Health != nil {
			ds["routes."+r.Name+".health.interval"] = r.Health.Interval
			ds["routes."+r.Name+".health.timeout"] = r.Health.Timeout
		}
	}
	for key, v := range ds {
		if v == "" {
			continue
		}
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Errorf("%s: want a positive duration such as \"3s\", got %q", key, v)
		}
	}
	return nil
}

func (c *gatewayConfig) validateDNS() error {
	if c.Listen.DNS == "" {
		return nil
	}
	if c.DNS == nil || len(c.DNS.Answer) == 0 {
		return fmt.Errorf("dns.answer: required when listen.dns is set")
	}
	for _, a := range c.DNS.Answer {
		if _, err := netip.ParseAddr(a); err != nil {
			return fmt.Errorf("dns.answer: want an IP address, got %q", a)
		}
	}
	for _, f := range c.DNS.Forward {
		if _, _, err := net.SplitHostPort(f); err != nil {
			return fmt.Errorf("dns.forward: want host:port, got %q", f)
		}
	}
	return nil
}

func (c *gatewayConfig) validateRoutes() error {
	seen := map[string]bool{}
	for i, r := range c.Routes {
		key := fmt.Sprintf("routes[%d]", i)
		if r.Name == "" || seen[r.Name] {
			return fmt.Errorf("%s.name: want a unique name, got %q", key, r.Name)
		}
		seen[r.Name] = true
		if len(r.SNI) == 0 || len(r.Upstreams) == 0 {
			return fmt.Errorf("%s: want sni and upstreams", key)
		}
		if err := validateMode(key, r); err != nil {
			return err
		}
		for _, u := range r.Upstreams {
			host, _, err := net.SplitHostPort(u)
			if err != nil {
				return fmt.Errorf("%s.upstreams: want host:port, got %q", key, u)
			}
			// The gateway resolving its own routed name would get its own
			// address back from a resolver that serves the routed names.
			if c.isRouted(host) {
				return fmt.Errorf("%s.upstreams: %q is a routed name: the gateway would dial itself; give the registry's addresses or another name", key, u)
			}
		}
	}
	if c.DefaultRoute != "" && !seen[c.DefaultRoute] {
		return fmt.Errorf("default_route: no route named %q", c.DefaultRoute)
	}
	return nil
}

func validateMode(key string, r routeConfig) error {
	switch r.Mode {
	case "bridge":
		if r.Serve == nil || r.UpstreamTLS == nil || r.ProxyProtocol != "" {
			return fmt.Errorf("%s: bridge wants serve and upstream_tls, and no proxy_protocol", key)
		}
		if (r.Serve.Cert == "") == (r.Serve.CACert == "") {
			return fmt.Errorf("%s.serve: want either cert/key or ca_cert/ca_key", key)
		}
	case "splice":
		if r.Serve != nil || r.UpstreamTLS != nil {
			return fmt.Errorf("%s: serve and upstream_tls are bridge-only keys", key)
		}
	default:
		return fmt.Errorf("%s.mode: want bridge or splice, got %q", key, r.Mode)
	}
	return nil
}

// listenPort returns the port of a "host:port" listen address.
func listenPort(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("listen address %q: want host:port such as \":443\"", addr)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return 0, fmt.Errorf("listen address %q: bad port", addr)
	}
	return n, nil
}

// certificatePaths lists every certificate, key and CA file the config names.
func (c *gatewayConfig) certificatePaths() []string {
	var ps []string
	for _, r := range c.Routes {
		if r.Serve != nil {
			ps = append(ps, r.Serve.Cert, r.Serve.Key, r.Serve.CACert, r.Serve.CAKey)
		}
		if r.UpstreamTLS != nil {
			ps = append(ps, r.UpstreamTLS.Cert, r.UpstreamTLS.Key, r.UpstreamTLS.CA)
		}
	}
	out := ps[:0]
	for _, p := range ps {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// TestGatewayConfigParser shows that the mirror of the configuration
// format does reject what snigate rejects, so the example checks mean
// something.
func TestGatewayConfigParser(t *testing.T) {
	const good = `
listen: {tls: [":443"], dns: ":53", admin: "127.0.0.1:9090"}
dns: {answer: ["192.0.2.10"]}
routes:
  - name: r
    sni: ["registry.example.test", "*.blobs.example.test"]
    mode: splice
    upstreams: ["198.51.100.1:443"]
`
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"good", good, ""},
		{"unknown key", strings.Replace(good, "admin:", "admn:", 1), `unknown field "admn"`},
		{"wrong type", strings.Replace(good, `dns: ":53"`, `dns: [53]`, 1), "cannot unmarshal"},
		{"bad duration", good + "timeouts: {drain: 30}\n", "timeouts.drain"},
		{"dns without answer", strings.Replace(good, `dns: {answer: ["192.0.2.10"]}`, "", 1), "dns.answer"},
		{"bridge key on splice", strings.Replace(good, "mode: splice", "mode: splice\n    serve: {cert: a, key: b}", 1), "bridge-only"},
		{"upstream is routed", strings.Replace(good, "198.51.100.1:443", "registry.example.test:443", 1), "dial itself"},
		{"upstream matches wildcard", strings.Replace(good, "198.51.100.1:443", "eu.blobs.example.test:443", 1), "dial itself"},
		{"bad mode", strings.Replace(good, "mode: splice", "mode: tcp", 1), "want bridge or splice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseGatewayConfig([]byte(tt.yaml))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
