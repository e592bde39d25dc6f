package deploy

import (
	"bufio"
	"bytes"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/snigate/snigate/internal/nodeconfig"
)

const (
	hostsTomlPath = "node/containerd/certs.d/registry.example.test/hosts.toml"
	// nodeHostsTomlPath: the same, presenting the kubelet's certificate (serve.client_ca).
	nodeHostsTomlPath = "node/containerd/node-identity/registry.example.test/hosts.toml"
	hostsPath         = "node/hosts"
	resolvPath        = "node/resolv.conf"
	resolvedPath      = "node/systemd-resolved/snigate.conf"
	nftPath           = "node/nftables-admin.nft"
)

// containerdHosts mirrors containerd's hosts.toml (docs/hosts.md in
// containerd), so a misspelt key is caught here rather than ignored there.
type containerdHosts struct {
	Server     string                    `toml:"server"`
	Capability []string                  `toml:"capabilities"`
	CA         any                       `toml:"ca"`
	Client     any                       `toml:"client"`
	SkipVerify *bool                     `toml:"skip_verify"`
	Header     map[string]any            `toml:"header"`
	Override   *bool                     `toml:"override_path"`
	Host       map[string]containerdHost `toml:"host"`
}

type containerdHost struct {
	Capabilities []string       `toml:"capabilities"`
	CA           any            `toml:"ca"`
	Client       any            `toml:"client"`
	SkipVerify   *bool          `toml:"skip_verify"`
	Header       map[string]any `toml:"header"`
	OverridePath *bool          `toml:"override_path"`
	DialTimeout  string         `toml:"dial_timeout"`
}

// TestContainerdHostsTomlIsNodeConfigs: the shipped hosts.toml files are
// byte for byte what node-config writes for the example route (the plain
// one, and the one presenting the kubelet's certificate for a route with
// serve.client_ca): one recipe everywhere.
func TestContainerdHostsTomlIsNodeConfigs(t *testing.T) {
	cfg := bastionGatewayConfig(t)
	route := cfg.routeOf("registry.example.test")
	if route == "" {
		t.Fatalf("%s routes no registry.example.test", bastionConfig)
	}
	host := nodeconfig.Host{Name: "registry.example.test", Route: route, CA: []byte{}}
	nodeHost := host
	nodeHost.ClientCert = true
	for path, want := range map[string][]byte{
		hostsTomlPath:     nodeconfig.HostsTOML(nodeconfig.Config{}, host),
		nodeHostsTomlPath: nodeconfig.HostsTOML(nodeconfig.Config{}, nodeHost),
	} {
		if got := readFile(t, path); !bytes.Equal(got, want) {
			t.Errorf("%s is not what node-config writes; want exactly:\n%s", path, want)
		}
	}
}

// TestContainerdHostsToml: the file is what containerd 1.6 and later read
// (containerd 1.6 refuses a hosts.toml without a [host] table), with no
// misspelt key, for a routed name, trusting the CA beside it.
func TestContainerdHostsToml(t *testing.T) {
	cfg := bastionGatewayConfig(t)
	for _, path := range []string{hostsTomlPath, nodeHostsTomlPath} {
		var h containerdHosts
		dec := toml.NewDecoder(bytes.NewReader(readFile(t, path)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		registry := strings.TrimPrefix(h.Server, "https://")
		if !cfg.isRouted(registry) || !strings.Contains(path, "/"+registry+"/") {
			t.Errorf("%s: server %q: want a routed name of %s, matching the certs.d directory", path, h.Server, bastionConfig)
		}
		host, ok := h.Host[h.Server]
		if !ok {
			t.Fatalf("%s: no [host.%q] section", path, h.Server)
		}
		if host.SkipVerify != nil && *host.SkipVerify {
			t.Errorf("%s: skip_verify: the point is to trust the gateway's CA, not to turn verification off", path)
		}
		if host.CA != nodeconfig.CAFile || h.CA != nodeconfig.CAFile {
			t.Errorf("%s: ca = %v (top level %v): want %s, the file beside it", path, host.CA, h.CA, nodeconfig.CAFile)
		}
		if !slices.Contains(host.Capabilities, "pull") || !slices.Contains(host.Capabilities, "resolve") {
			t.Errorf("%s: capabilities %v: want pull and resolve", path, host.Capabilities)
		}
		if path == nodeHostsTomlPath && (host.Client != nodeconfig.DefaultClientCert || h.Client != nodeconfig.DefaultClientCert) {
			t.Errorf("%s: client = %v: want the kubelet's rotating combined PEM", path, host.Client)
		}
	}
}

func bastionGatewayConfig(t *testing.T) *gatewayConfig {
	t.Helper()
	cfg, err := parseGatewayConfig(readFile(t, bastionConfig))
	if err != nil {
		t.Fatalf("%s: %v", bastionConfig, err)
	}
	return cfg
}

// TestNodeRecipesMatchGateway: the addresses the node recipes send traffic
// to are the gateways' own answers, and the names are the routed ones.
func TestNodeRecipesMatchGateway(t *testing.T) {
	cfg := bastionGatewayConfig(t)
	answers := cfg.DNS.Answer
	checkAddr := func(where, a string) {
		if _, err := netip.ParseAddr(a); err != nil || !slices.Contains(answers, a) {
			t.Errorf("%s: %q is not one of the gateways' dns.answer %v", where, a, answers)
		}
	}
	for _, f := range fieldsOf(readFile(t, hostsPath)) {
		checkAddr(hostsPath, f[0])
		for _, name := range f[1:] {
			if !cfg.isRouted(name) {
				t.Errorf("%s: %s is not routed by %s", hostsPath, name, bastionConfig)
			}
		}
	}
	for _, f := range fieldsOf(readFile(t, resolvPath)) {
		if f[0] == "nameserver" {
			checkAddr(resolvPath, f[1])
		}
	}
	u := parseUnit(t, readFile(t, resolvedPath))
	for _, a := range strings.Fields(u.last("Resolve", "DNS")) {
		checkAddr(resolvedPath, a)
	}
	for _, d := range strings.Fields(u.last("Resolve", "Domains")) {
		zone, ok := strings.CutPrefix(d, "~")
		if !ok {
			t.Errorf("%s: Domains=%s: want a routing-only domain (~%s), not a search suffix", resolvedPath, d, d)
		}
		if !cfg.isRouted("registry." + zone) {
			t.Errorf("%s: Domains=%s does not cover the routed registry name", resolvedPath, d)
		}
	}
}

func fieldsOf(b []byte) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

func TestNftablesAdminRecipe(t *testing.T) {
	nft, err := exec.LookPath("nft")
	if err != nil {
		t.Skip("nft not installed (Debian package nftables): skipping the syntax check")
	}
	if out, err := exec.Command(nft, "-c", "-f", nftPath).CombinedOutput(); err != nil {
		t.Fatalf("nft -c -f %s: %v\n%s", nftPath, err, out)
	}
}

// routeOf is the name of the route whose sni lists host exactly; "": none.
func (c *gatewayConfig) routeOf(host string) string {
	for _, r := range c.Routes {
		if slices.Contains(r.SNI, host) {
			return r.Name
		}
	}
	return ""
}
