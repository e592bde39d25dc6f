package nodeconfig

import (
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func testConfig(rt Runtime) Config {
	return Config{
		Hosts: []Host{
			{Name: "registry.example.com", Route: "registry", CA: []byte("CA-PEM\n")},
			{Name: "auth.example.com", Port: 8443, Route: "auth", CA: []byte("CA-PEM\n"), ClientCert: true},
		},
		Names:      []string{"registry.example.com", "*.registry.example.com", "auth.example.com", "mirror.example.com"},
		Answers:    []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")},
		DNSServers: []string{"10.0.0.5", "10.0.0.6:5353"},
		Runtime:    rt,
	}
}

func TestBuildLayouts(t *testing.T) {
	tests := []struct {
		name  string
		rt    Runtime
		files map[string]string // path -> destination
	}{
		{name: "containerd", rt: RuntimeContainerd, files: map[string]string{
			"certs.d/registry.example.com/hosts.toml":     "/etc/containerd/certs.d/registry.example.com/hosts.toml",
			"certs.d/registry.example.com/snigate-ca.crt": "/etc/containerd/certs.d/registry.example.com/snigate-ca.crt",
			"certs.d/auth.example.com_8443_/hosts.toml":   "/etc/containerd/certs.d/auth.example.com_8443_/hosts.toml",
			"certs.d/auth.example.com_8443_/" + CAFile:    "/etc/containerd/certs.d/auth.example.com_8443_/" + CAFile,
			"rancher/registry.example.com/" + CAFile:      "/etc/rancher/snigate/registry.example.com/" + CAFile,
			"rancher/auth.example.com:8443/" + CAFile:     "/etc/rancher/snigate/auth.example.com:8443/" + CAFile,
			"registries.yaml":                             "/etc/rancher/k3s/registries.yaml",
			"resolved.conf.d/snigate.conf":                "/etc/systemd/resolved.conf.d/snigate.conf",
			"hosts":                                       "/etc/hosts",
		}},
		{name: "docker", rt: RuntimeDocker, files: map[string]string{
			"certs.d/registry.example.com/" + CAFile:    "/etc/docker/certs.d/registry.example.com/" + CAFile,
			"certs.d/auth.example.com:8443/" + CAFile:   "/etc/docker/certs.d/auth.example.com:8443/" + CAFile,
			"certs.d/auth.example.com:8443/client.cert": "/etc/docker/certs.d/auth.example.com:8443/client.cert",
			"certs.d/auth.example.com:8443/client.key":  "/etc/docker/certs.d/auth.example.com:8443/client.key",
			"resolved.conf.d/snigate.conf":              "/etc/systemd/resolved.conf.d/snigate.conf",
			"hosts":                                     "/etc/hosts",
		}},
		{name: "podman", rt: RuntimePodman, files: map[string]string{
			"certs.d/registry.example.com/" + CAFile:    "/etc/containers/certs.d/registry.example.com/" + CAFile,
			"certs.d/auth.example.com:8443/" + CAFile:   "/etc/containers/certs.d/auth.example.com:8443/" + CAFile,
			"certs.d/auth.example.com:8443/client.cert": "/etc/containers/certs.d/auth.example.com:8443/client.cert",
			"certs.d/auth.example.com:8443/client.key":  "/etc/containers/certs.d/auth.example.com:8443/client.key",
			"resolved.conf.d/snigate.conf":              "/etc/systemd/resolved.conf.d/snigate.conf",
			"hosts":                                     "/etc/hosts",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := Build(testConfig(tt.rt), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range files {
				got[f.Path] = f.Dest
			}
			if a, b := keys(got), keys(tt.files); a != b {
				t.Fatalf("files\n%s\nwant\n%s", a, b)
			}
			for p, d := range tt.files {
				if got[p] != d {
					t.Errorf("%s goes to %s, want %s", p, got[p], d)
				}
			}
		})
	}
}

func keys(m map[string]string) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, "\n")
}

func TestBuildTexts(t *testing.T) {
	files, err := Build(testConfig(RuntimeContainerd), nil)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for _, f := range files {
		byPath[f.Path] = string(f.Data)
	}
	tests := []struct {
		name, path string
		want       []string
	}{
		{name: "resolved: gateways only, routing domains, no fallback", path: "resolved.conf.d/snigate.conf", want: []string{
			"[Resolve]\n", "DNS=10.0.0.5 10.0.0.6:5353\n",
			"Domains=~registry.example.com ~auth.example.com ~mirror.example.com\n", "FallbackDNS=\n"}},
		{name: "hosts: every address, exact names, wildcard noted", path: "hosts", want: []string{
			"10.0.0.5 registry.example.com auth.example.com mirror.example.com\n",
			"10.0.0.6 registry.example.com auth.example.com mirror.example.com\n",
			"not covered (no wildcards in /etc/hosts; add each name you pull from): *.registry.example.com\n"}},
		{name: "registries.yaml", path: "registries.yaml", want: []string{
			"configs:\n  \"registry.example.com\":\n    tls:\n      ca_file: \"/etc/rancher/snigate/registry.example.com/snigate-ca.crt\"\n",
			"  \"auth.example.com:8443\":\n    tls:\n      ca_file: \"/etc/rancher/snigate/auth.example.com:8443/snigate-ca.crt\"\n" +
				"      cert_file: \"" + DefaultClientCert + "\"\n      key_file: \"" + DefaultClientCert + "\"\n"}},
		{name: "hosts.toml with port and client", path: "certs.d/auth.example.com_8443_/hosts.toml", want: []string{
			"server = \"https://auth.example.com:8443\"\n", "ca = \"snigate-ca.crt\"\n", "client = \"" + DefaultClientCert + "\"\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				if !strings.Contains(byPath[tt.path], w) {
					t.Errorf("%s lacks %q:\n%s", tt.path, w, byPath[tt.path])
				}
			}
		})
	}
}

// TestWriteMergesExistingHostsTOML: a second tool's mirror entry in the
// output directory survives Build and Write.
func TestWriteMergesExistingHostsTOML(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "certs.d", "registry.example.com", "hosts.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(spegel), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(RuntimeContainerd)
	files, err := Build(cfg, ReadDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `[host."http://127.0.0.1:30020"]`) || !strings.Contains(string(got), "ca = \"snigate-ca.crt\"") {
		t.Fatalf("merged hosts.toml:\n%s", got)
	}
	ca, err := os.ReadFile(filepath.Join(filepath.Dir(p), CAFile))
	if err != nil || string(ca) != "CA-PEM\n" {
		t.Fatalf("CA file beside hosts.toml: %q, %v", ca, err)
	}
}

func TestBuildRefusesBrokenExistingHostsTOML(t *testing.T) {
	existing := func(p string) ([]byte, error) { return []byte("[host.\"x\"\n"), nil }
	_, err := Build(testConfig(RuntimeContainerd), existing)
	if err == nil || !strings.Contains(err.Error(), "certs.d/registry.example.com/hosts.toml: line 1") ||
		!strings.Contains(err.Error(), "fix it or move it away") {
		t.Fatalf("err = %v", err)
	}
}

func TestWriteLinks(t *testing.T) {
	dir := t.TempDir()
	files, err := Build(testConfig(RuntimePodman), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second run replaces the links
		if err := Write(dir, files); err != nil {
			t.Fatal(err)
		}
	}
	target, err := os.Readlink(filepath.Join(dir, "certs.d", "auth.example.com:8443", "client.cert"))
	if err != nil || target != DefaultClientCert {
		t.Fatalf("client.cert -> %q, %v", target, err)
	}
}

// TestBuildSeveralRegistriesWithDockerHub: one gateway for docker.io,
// ghcr.io and a private registry writes one hosts.toml per routed
// registry, and, for Docker Hub, one in containerd's docker.io namespace
// (what docker.io/library/x references read) whose server is
// registry-1.docker.io; docker's certs.d keeps the registry host only.
func TestBuildSeveralRegistriesWithDockerHub(t *testing.T) {
	c := Config{
		Hosts: []Host{
			{Name: DockerHubRegistry, Route: "dockerhub", CA: []byte("CA-PEM\n")},
			{Name: "ghcr.io", Route: "ghcr", CA: []byte("CA-PEM\n")},
			{Name: "registry.example.com", Route: "private", CA: []byte("CA-PEM\n")},
		},
		Names:   []string{DockerHubRegistry, "ghcr.io", "registry.example.com"},
		Answers: []netip.Addr{netip.MustParseAddr("10.0.0.5")},
	}
	for _, tc := range []struct {
		name  string
		rt    Runtime
		want  []string
		never []string
	}{
		{name: "containerd", rt: RuntimeContainerd, want: []string{"certs.d/docker.io/hosts.toml", "certs.d/docker.io/" + CAFile,
			"certs.d/registry-1.docker.io/hosts.toml", "certs.d/ghcr.io/hosts.toml", "certs.d/registry.example.com/hosts.toml"}},
		{name: "docker", rt: RuntimeDocker, want: []string{"certs.d/registry-1.docker.io/" + CAFile, "certs.d/ghcr.io/" + CAFile},
			never: []string{"certs.d/docker.io/" + CAFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Runtime = tc.rt
			files, err := Build(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			byPath := map[string]string{}
			for _, f := range files {
				byPath[f.Path] = string(f.Data)
			}
			for _, p := range tc.want {
				if _, ok := byPath[p]; !ok {
					t.Errorf("no %s among %v", p, keysOf(byPath))
				}
			}
			for _, p := range tc.never {
				if _, ok := byPath[p]; ok {
					t.Errorf("%s written for %s", p, tc.rt)
				}
			}
			if hub, ok := byPath["certs.d/docker.io/hosts.toml"]; ok {
				for _, w := range []string{"server = \"https://registry-1.docker.io\"\n", "[host.\"https://registry-1.docker.io\"]\n", "ca = \"" + CAFile + "\"\n"} {
					if !strings.Contains(hub, w) {
						t.Errorf("certs.d/docker.io/hosts.toml lacks %q:\n%s", w, hub)
					}
				}
			}
		})
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
