package gateway

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/nodeconfig"
	"github.com/snigate/snigate/internal/pki"
)

// nodeConfigFile writes a configuration with a minting bridge route, a
// fixed-certificate bridge route and a splice route; listen.tls and
// listen.dns are the given addresses.
// fixedCert and fixedKey are the fixed route's files; nil: a self-signed
// certificate.
func nodeConfigFile(t *testing.T, tlsAddr, dnsAddr string, fixedCert, fixedKey []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := certs.InitCA(certs.InitCAConfig{Dir: filepath.Join(dir, "ca")}); err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.SelfSigned(pki.SANs("fixed.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if fixedCert == nil {
		fixedCert, fixedKey = leaf.CertPEM, leaf.KeyPEM
	}
	if err := pki.WriteFiles(dir, map[string][]byte{"fixed.crt": fixedCert, "fixed.key": fixedKey}); err != nil {
		t.Fatal(err)
	}
	yaml := `listen:
  tls: [` + tlsAddr + `]
  dns: "` + dnsAddr + `"
dns:
  answer: ["10.0.0.5", "10.0.0.6"]
routes:
  - name: registry
    sni: ["registry.example.com", "*.registry.example.com"]
    mode: bridge
    upstreams: ["10.1.0.10:443"]
    serve: {ca_cert: ca/ca.crt, ca_key: ca/ca.key}
    upstream_tls: {}
  - name: fixed
    sni: ["fixed.example.com"]
    mode: bridge
    upstreams: ["10.1.0.11:443"]
    serve: {cert: fixed.crt, key: fixed.key}
    upstream_tls: {}
  - name: mirror
    sni: ["mirror.example.com"]
    mode: splice
    upstreams: ["10.1.0.20:443"]
`
	p := filepath.Join(dir, "snigate.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNodeConfig(t *testing.T) {
	tests := []struct {
		name        string
		tls, dns    string
		wantPort    int
		wantServers []string
		wantWarns   []string
	}{
		{name: "443 and :53 on every answer", tls: `":8443", ":443"`, dns: ":53", wantPort: 443,
			wantServers: []string{"10.0.0.5", "10.0.0.6"},
			wantWarns:   []string{"routes[0].sni[1] *.registry.example.com", "route fixed: serve.cert holds no CA", "route mirror (splice): DNS only"}},
		{name: "other ports; each gateway's dns on its own answer address: all of them", tls: `":8443"`, dns: "10.0.0.5:5353", wantPort: 8443,
			wantServers: []string{"10.0.0.5:5353", "10.0.0.6:5353"}},
		{name: "dns on the second answer address: all of them", tls: `":443"`, dns: "10.0.0.6:53", wantPort: 443,
			wantServers: []string{"10.0.0.5", "10.0.0.6"}},
		{name: "dns on an address none of the answers", tls: `":443"`, dns: "10.0.0.53:53", wantPort: 443,
			wantServers: []string{"10.0.0.53"}, wantWarns: []string{"listen.dns 10.0.0.53:53 is none of dns.answer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, warns, err := NodeConfig(nodeConfigFile(t, tt.tls, tt.dns, nil, nil), NodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, h := range nc.Hosts {
				names = append(names, h.Name)
				if h.Port != tt.wantPort || h.CA == nil {
					t.Errorf("host %s: port %d, CA %v; want port %d and a CA", h.Name, h.Port, h.CA != nil, tt.wantPort)
				}
			}
			if want := []string{"registry.example.com", "fixed.example.com"}; !slices.Equal(names, want) {
				t.Errorf("hosts %v, want %v (exact names of bridge routes)", names, want)
			}
			if !slices.Equal(nc.DNSServers, tt.wantServers) {
				t.Errorf("DNS servers %v, want %v", nc.DNSServers, tt.wantServers)
			}
			if want := []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")}; !slices.Equal(nc.Answers, want) {
				t.Errorf("answers %v", nc.Answers)
			}
			all := strings.Join(warns, "\n")
			for _, w := range tt.wantWarns {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestNodeConfigCA: the minting route's CA is ca.crt; a fixed certificate
// with its CA after it gives that CA, not the leaf.
func TestNodeConfigCA(t *testing.T) {
	root, err := pki.NewAuthority("fixed root")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := root.Issue(pki.SANs("fixed.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	path := nodeConfigFile(t, `":443"`, ":53", append(leaf.CertPEM, root.PEM...), leaf.KeyPEM)
	nc, warns, err := NodeConfig(path, NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mint, err := os.ReadFile(filepath.Join(filepath.Dir(path), "ca", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(nc.Hosts[0].CA, mint) {
		t.Error("the minting route's CA is not ca/ca.crt")
	}
	if !bytes.Equal(nc.Hosts[1].CA, root.PEM) {
		t.Error("the fixed route's CA is not the root after its leaf")
	}
	if strings.Contains(strings.Join(warns, "\n"), "holds no CA") {
		t.Error("warned about a pinned certificate though the file holds its CA")
	}
	var out bytes.Buffer
	dir := t.TempDir()
	if err := WriteNodeConfig(path, dir, NodeOptions{Runtime: nodeconfig.RuntimePodman}, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "certs.d", "fixed.example.com", nodeconfig.CAFile)); err != nil || !strings.Contains(out.String(), "/etc/containers/certs.d/fixed.example.com/") {
		t.Fatalf("podman layout not written (%v):\n%s", err, out.String())
	}
}

// TestNodeConfigClientCert: a route with serve.client_ca (node identity)
// gets a client certificate entry for its hosts; the others do not.
func TestNodeConfigClientCert(t *testing.T) {
	path := nodeConfigFile(t, `":443"`, ":53", nil, nil)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("serve: {cert: fixed.crt, key: fixed.key}"), []byte("serve: {cert: fixed.crt, key: fixed.key, client_ca: ca/ca.crt}"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	nc, _, err := NodeConfig(path, NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range nc.Hosts {
		if want := h.Name == "fixed.example.com"; h.ClientCert != want {
			t.Errorf("host %s: ClientCert %v, want %v", h.Name, h.ClientCert, want)
		}
	}
}
