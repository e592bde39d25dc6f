package nodeconfig

import (
	"strings"
	"testing"
)

// TestTrustInstructionsWriteNodeConfigsFile: ca init's recipe installs
// the very hosts.toml node-config writes, and the CA under the name that
// file gives it.
func TestTrustInstructionsWriteNodeConfigsFile(t *testing.T) {
	tests := []struct {
		name, registry, dir string
		host                Host
	}{
		{name: "port 443", registry: "registry.example.com", dir: "registry.example.com", host: Host{Name: "registry.example.com", CA: []byte("x")}},
		{name: "other port", registry: "registry.example.com:5000", dir: "registry.example.com_5000_", host: Host{Name: "registry.example.com", Port: 5000, CA: []byte("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TrustInstructions(tt.registry, "/etc/snigate/ca/ca.crt")
			d := "/etc/containerd/certs.d/" + tt.dir
			for _, want := range []string{
				"sudo tee " + d + "/hosts.toml >/dev/null <<'EOF'\n" + string(hostsTOML(Config{}, tt.host)) + "EOF\n",
				"sudo cp /etc/snigate/ca/ca.crt " + d + "/" + CAFile + "\n",
				"sudo cp /etc/snigate/ca/ca.crt /etc/docker/certs.d/" + tt.host.Registry() + "/" + CAFile + "\n",
				"sudo cp /etc/snigate/ca/ca.crt /etc/containers/certs.d/" + tt.host.Registry() + "/" + CAFile + "\n",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("recipe lacks %q:\n%s", want, got)
				}
			}
		})
	}
}
