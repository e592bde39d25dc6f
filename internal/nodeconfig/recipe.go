package nodeconfig

import (
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
)

// TrustInstructions is the shell recipe that makes a node trust the CA
// file caPath for registry only (a name, or "name:port"), for containerd
// (the hosts.toml node-config writes, from the same generator), Docker
// and Podman/CRI-O. None of them is a system-wide trust: each applies to
// pulls from that registry. `snigate ca init` prints it.
func TrustInstructions(registry, caPath string) string {
	h := Host{Name: registry, CA: []byte{}}
	if name, port, err := net.SplitHostPort(registry); err == nil {
		h.Name = name
		h.Port, _ = strconv.Atoi(port)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Make nodes trust %s for %s only (or let `snigate node-config` write these files):\n\n", caPath, h.Registry())
	d := path.Join(certsDirs[RuntimeContainerd], h.dir(RuntimeContainerd))
	b.WriteString("  containerd (Kubernetes nodes):\n")
	fmt.Fprintf(&b, "    sudo mkdir -p %s\n", d)
	fmt.Fprintf(&b, "    sudo cp %s %s/%s\n", caPath, d, CAFile)
	fmt.Fprintf(&b, "    sudo tee %s/hosts.toml >/dev/null <<'EOF'\n%sEOF\n", d, hostsTOML(Config{}, h))
	fmt.Fprintf(&b, "    (containerd reads certs.d only with config_path = %q\n", certsDirs[RuntimeContainerd])
	b.WriteString("     under [plugins.\"io.containerd.grpc.v1.cri\".registry] in config.toml; containerd 2.x:\n")
	b.WriteString("     [plugins.\"io.containerd.cri.v1.images\".registry])\n\n")
	for _, tool := range []struct {
		name string
		rt   Runtime
	}{{"Docker", RuntimeDocker}, {"Podman / CRI-O", RuntimePodman}} {
		d := path.Join(certsDirs[tool.rt], h.dir(tool.rt))
		fmt.Fprintf(&b, "  %s (no hosts.toml: it reads the *.crt files of the directory):\n", tool.name)
		fmt.Fprintf(&b, "    sudo mkdir -p %s\n", d)
		fmt.Fprintf(&b, "    sudo cp %s %s/%s\n\n", caPath, d, CAFile)
	}
	return b.String()
}
