package certs

import (
	"fmt"
	"path/filepath"
	"strings"
)

// TrustInstructions is the text that tells an operator how to make nodes
// trust the CA at caPath for registry host only (host may carry a port:
// "registry.example.com:5000"), for containerd, Docker and Podman/CRI-O.
// None of them is a system-wide trust: each applies to pulls from host.
func TrustInstructions(host, caPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Make nodes trust %s for %s only:\n\n", caPath, host)
	d := "/etc/containerd/certs.d/" + host
	fmt.Fprintf(&b, "  containerd (Kubernetes nodes):\n")
	fmt.Fprintf(&b, "    sudo mkdir -p %s\n", d)
	fmt.Fprintf(&b, "    sudo cp %s %s/ca.crt\n", caPath, d)
	fmt.Fprintf(&b, "    sudo tee %s/hosts.toml >/dev/null <<'EOF'\n", d)
	fmt.Fprintf(&b, "server = \"https://%s\"\n\n[host.\"https://%s\"]\n  ca = \"%s/ca.crt\"\nEOF\n", host, host, d)
	fmt.Fprintf(&b, "    (containerd 1.x reads certs.d only with config_path = \"/etc/containerd/certs.d\"\n")
	fmt.Fprintf(&b, "     under [plugins.\"io.containerd.grpc.v1.cri\".registry] in config.toml)\n\n")
	for _, tool := range []struct{ name, dir string }{
		{"Docker", "/etc/docker/certs.d/"},
		{"Podman / CRI-O", "/etc/containers/certs.d/"},
	} {
		fmt.Fprintf(&b, "  %s:\n", tool.name)
		fmt.Fprintf(&b, "    sudo mkdir -p %s%s\n", tool.dir, host)
		fmt.Fprintf(&b, "    sudo cp %s %s%s/ca.crt\n\n", caPath, tool.dir, host)
	}
	return b.String()
}

// InitCASummary is what `snigate ca init` prints after InitCA succeeded:
// the files written, what the CA may sign for, and TrustInstructions for
// each name (for a placeholder host when there are none).
func InitCASummary(dir string, names []string) string {
	caPath := filepath.Join(dir, CACertFileName)
	if abs, err := filepath.Abs(caPath); err == nil {
		caPath = abs
	}
	names, _ = constraintNames(names)
	var b strings.Builder
	fmt.Fprintf(&b, "wrote %s (certificate, 0644) and %s (private key, 0600)\n",
		caPath, filepath.Join(filepath.Dir(caPath), CAKeyFileName))
	if len(names) == 0 {
		b.WriteString("the CA has no name constraints: it can sign for any name (use --name to restrict it)\n\n")
		b.WriteString(TrustInstructions("REGISTRY", caPath))
		return b.String()
	}
	fmt.Fprintf(&b, "the CA is constrained to %s: snigate mints only for each name and exactly one label below it\n\n",
		strings.Join(names, ", "))
	for _, n := range names {
		b.WriteString(TrustInstructions(n, caPath))
	}
	return b.String()
}
