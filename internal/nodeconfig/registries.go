package nodeconfig

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// rancherCADir is where registries.yaml expects the CA files on a k3s or
// RKE2 node (k3s rewrites its own certs.d from registries.yaml, so the
// files live outside it).
const rancherCADir = "/etc/rancher/snigate"

// registriesYAML is k3s/RKE2's registries.yaml: for each host, the CA the
// node trusts and, when the route asks for node identity, the node's
// client certificate.
func registriesYAML(c Config) []byte {
	var b strings.Builder
	b.WriteString("# snigate node-config: k3s: /etc/rancher/k3s/registries.yaml, RKE2: /etc/rancher/rke2/registries.yaml\n")
	b.WriteString("# (restart k3s or rke2-server/rke2-agent after a change)\n")
	b.WriteString("configs:\n")
	for _, h := range c.Hosts {
		if h.CA == nil && !c.wantsClient(h) {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n    tls:\n", strconv.Quote(h.Registry()))
		if h.CA != nil {
			fmt.Fprintf(&b, "      ca_file: %s\n", strconv.Quote(rancherCAFile(h)))
		}
		if c.wantsClient(h) {
			key := c.ClientKey
			if key == "" {
				key = c.clientCert()
			}
			fmt.Fprintf(&b, "      cert_file: %s\n      key_file: %s\n", strconv.Quote(c.clientCert()), strconv.Quote(key))
		}
	}
	return []byte(b.String())
}

// rancherCAFile is the node path of h's CA for registries.yaml.
func rancherCAFile(h Host) string {
	return path.Join(rancherCADir, h.dir(RuntimeDocker), CAFile)
}
