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

// TestContainerdHostsTomlNodeIdentity: the node identity recipe is the
// plain one plus the kubelet's combined PEM as the client certificate.
func TestContainerdHostsTomlNodeIdentity(t *testing.T) {
	var plain, node containerdHosts
	for path, h := range map[string]*containerdHosts{hostsTomlPath: &plain, nodeHostsTomlPath: &node} {
		dec := toml.NewDecoder(bytes.NewReader(readFile(t, path)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(h); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	host, ok := node.Host[node.Server]
	if node.Server != plain.Server || !ok {
		t.Fatalf("%s: server %q and its [host] section; want those of %s (%q)", nodeHostsTomlPath, node.Server, hostsTomlPath, plain.Server)
	}
	if want := plain.Host[plain.Server].CA; host.CA != want {
		t.Errorf("ca = %v, want %v as in %s", host.CA, want, hostsTomlPath)
	}
	if host.Client != "/var/lib/kubelet/pki/kubelet-client-current.pem" {
		t.Errorf("client = %v: want the kubelet's rotating combined PEM", host.Client)
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

func TestContainerdHostsToml(t *testing.T) {
	cfg := bastionGatewayConfig(t)
	var h containerdHosts
	dec := toml.NewDecoder(bytes.NewReader(readFile(t, hostsTomlPath)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		t.Fatalf("%s: %v", hostsTomlPath, err)
	}
	registry := strings.TrimPrefix(h.Server, "https://")
	if !cfg.isRouted(registry) || !strings.Contains(hostsTomlPath, "/"+registry+"/") {
		t.Errorf("server %q: want a routed name of %s, matching the certs.d directory", h.Server, bastionConfig)
	}
	host, ok := h.Host[h.Server]
	if !ok {
		t.Fatalf("no [host.%q] section", h.Server)
	}
	if host.SkipVerify != nil && *host.SkipVerify {
		t.Errorf("skip_verify: the point is to trust the gateway's CA, not to turn verification off")
	}
	if ca, _ := host.CA.(string); !strings.HasPrefix(ca, "/etc/containerd/certs.d/"+registry+"/") {
		t.Errorf("ca = %v: want a file in the registry's certs.d directory", host.CA)
	}
	if !slices.Contains(host.Capabilities, "pull") || !slices.Contains(host.Capabilities, "resolve") {
		t.Errorf("capabilities %v: want pull and resolve", host.Capabilities)
	}
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
