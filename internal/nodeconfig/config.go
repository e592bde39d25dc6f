package nodeconfig

import (
	"fmt"
	"io/fs"
	"net/netip"
	"strconv"
)

// Runtime names the certs.d layout Build writes.
type Runtime string

// The runtimes of --runtime.
const (
	RuntimeContainerd Runtime = "containerd" // certs.d/<host>/hosts.toml, /etc/containerd/certs.d
	RuntimeDocker     Runtime = "docker"     // certs.d/<host>/*.crt, /etc/docker/certs.d
	RuntimePodman     Runtime = "podman"     // certs.d/<host>/*.crt, /etc/containers/certs.d
)

// ParseRuntime checks a --runtime value.
func ParseRuntime(s string) (Runtime, error) {
	switch r := Runtime(s); r {
	case RuntimeContainerd, RuntimeDocker, RuntimePodman:
		return r, nil
	}
	return "", fmt.Errorf("--runtime: want containerd, docker or podman, got %q", s)
}

// Defaults.
const (
	// DefaultPort is the TLS port of the gateway when a Host gives none.
	DefaultPort = 443
	// DefaultClientCert is the node's client certificate and key (one PEM
	// file) that kubeadm's kubelet keeps current: the identity a route
	// with serve.client_ca usually asks for.
	DefaultClientCert = "/var/lib/kubelet/pki/kubelet-client-current.pem"
	// CAFile is the name of the CA file written beside hosts.toml.
	CAFile = "snigate-ca.crt"
)

// Host is one registry name a node pulls from through the gateway.
type Host struct {
	Name  string // exact DNS name, canonical (no wildcard)
	Port  int    // the gateway's TLS port; 0: DefaultPort
	Route string // the route it belongs to, for the summary
	// CA is the PEM the node trusts for Name: the CA that issues the
	// gateway's serving certificate. Nil: the node keeps its system roots
	// (a splice route, where the registry's own certificate is seen).
	CA []byte
	// ClientCert is set when the route requires node identity
	// (serve.client_ca): hosts.toml then names the node's certificate.
	ClientCert bool
}

// Config is what Build needs, taken from the gateway's configuration.
type Config struct {
	Hosts []Host // certs.d entries, in order; names unique

	// Names are every routed name (exact or "*.") for the resolver
	// drop-in and /etc/hosts; wildcards only go to the drop-in.
	Names []string
	// Answers are the gateway addresses the DNS responder gives out
	// (dns.answer), for /etc/hosts; empty: no hosts file.
	Answers []netip.Addr
	// DNSServers are the gateway's DNS responders as ip or ip:port, for
	// the resolved drop-in; empty: no drop-in.
	DNSServers []string

	Runtime Runtime // "": RuntimeContainerd

	// ClientCert and ClientKey are the node's files named for routes with
	// ClientCert (and for every host when ClientAll is set); "" for
	// ClientCert: DefaultClientCert; "" for ClientKey: the key is in
	// ClientCert.
	ClientCert, ClientKey string
	ClientAll             bool // name the client certificate for every host
}

func (c Config) runtime() Runtime {
	if c.Runtime == "" {
		return RuntimeContainerd
	}
	return c.Runtime
}

func (c Config) clientCert() string {
	if c.ClientCert == "" {
		return DefaultClientCert
	}
	return c.ClientCert
}

func (c Config) wantsClient(h Host) bool { return h.ClientCert || c.ClientAll }

// port returns h's port, DefaultPort when unset.
func (h Host) port() int {
	if h.Port == 0 {
		return DefaultPort
	}
	return h.Port
}

// Registry is the host as an image reference names it: "name" on 443,
// "name:port" otherwise.
func (h Host) Registry() string {
	if h.port() == DefaultPort {
		return h.Name
	}
	return h.Name + ":" + strconv.Itoa(h.port())
}

// Docker Hub: images named docker.io/library/x (or just x) are pulled
// from DockerHubRegistry; containerd looks their hosts.toml up under the
// namespace, certs.d/docker.io.
const (
	DockerHubNamespace = "docker.io"
	DockerHubRegistry  = "registry-1.docker.io"
)

// dockerHub reports whether h is Docker Hub's registry host.
func (h Host) dockerHub() bool { return h.Name == DockerHubRegistry && h.port() == DefaultPort }

// Dir is the certs.d directory of h, as containerd looks it up: a port is
// written "_port_" ("name_5000_"); docker and podman use "name:port".
func (h Host) dir(rt Runtime) string {
	if h.port() == DefaultPort {
		return h.Name
	}
	if rt == RuntimeContainerd {
		return h.Name + "_" + strconv.Itoa(h.port()) + "_"
	}
	return h.Registry()
}

// File is one file for the node.
type File struct {
	Path string      // slash-separated, relative to the output directory
	Dest string      // where it goes on the node
	Data []byte      // contents; ignored when Link is set
	Mode fs.FileMode // permissions
	Link string      // when set, a symbolic link to this path on the node
	// Note says what the file does or what was merged, for the summary.
	Note string
}
