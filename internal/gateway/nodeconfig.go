package gateway

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/nodeconfig"
)

// NodeOptions are the choices of `snigate node-config` beyond the
// configuration file.
type NodeOptions struct {
	Runtime nodeconfig.Runtime // "": containerd
	// CA, when set, is the PEM file nodes trust for every bridge route,
	// in place of the one taken from serve.ca_cert or serve.cert.
	CA string
	// ClientCert and ClientKey are the node's own files; with ClientAll,
	// every host names them, else only routes that require node identity.
	ClientCert, ClientKey string
	ClientAll             bool
}

// NodeConfig reads the configuration file at path (as `snigate check`
// does) and returns what nodeconfig.Build needs, with warnings about what
// the node files cannot cover (wildcard names, a pinned certificate, no
// DNS responder). A configuration error is a config.ErrorList.
func NodeConfig(path string, opt NodeOptions) (nodeconfig.Config, []string, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nodeconfig.Config{}, nil, err
	}
	nc := nodeconfig.Config{
		Names:   cfg.RoutedNames(),
		Answers: cfg.DNS.Answer,
		Runtime: opt.Runtime, ClientCert: opt.ClientCert, ClientKey: opt.ClientKey, ClientAll: opt.ClientAll,
	}
	var warns []string
	port := tlsPort(cfg.Listen.TLS)
	for _, r := range cfg.Routes {
		hosts, w, err := nodeHosts(cfg, r, port, opt.CA)
		if err != nil {
			return nodeconfig.Config{}, nil, err
		}
		nc.Hosts = append(nc.Hosts, hosts...)
		warns = append(warns, w...)
	}
	var warn string
	nc.DNSServers, warn = dnsServers(cfg.Listen.DNS, cfg.DNS.Answer)
	if warn != "" {
		warns = append(warns, warn)
	}
	if len(nc.Answers) == 0 {
		warns = append(warns, "dns.answer is not set: no /etc/hosts lines (they need the gateway's addresses)")
	}
	if len(nc.DNSServers) == 0 {
		warns = append(warns, "listen.dns is not set: no resolved drop-in; send the routed names to the DNS server that answers them for snigate (the CoreDNS plugin)")
	}
	return nc, warns, nil
}

// nodeHosts are the certs.d hosts of route r: its exact SNI names, bridge
// routes only (on a splice route the node sees the registry's own
// certificate and trusts it as it would without snigate).
func nodeHosts(cfg *config.Config, r config.Route, port int, caFile string) ([]nodeconfig.Host, []string, error) {
	if r.Mode != config.ModeBridge {
		return nil, []string{fmt.Sprintf("route %s (splice): DNS only; the node sees the registry's own certificate, trust its CA as usual", r.Name)}, nil
	}
	ca, warn, err := nodeCA(cfg, r, caFile)
	if err != nil {
		return nil, nil, err
	}
	var hosts []nodeconfig.Host
	var warns []string
	if warn != "" {
		warns = append(warns, warn)
	}
	for i, n := range r.SNI {
		if strings.HasPrefix(n, "*.") {
			warns = append(warns, fmt.Sprintf("%s %s: certs.d has one directory per host: copy the one of an exact name for each name you pull from (and change its server)", r.SNIKeys[i], n))
			continue
		}
		hosts = append(hosts, nodeconfig.Host{Name: n, Port: port, Route: r.Name, CA: ca, ClientCert: r.Serve.ClientCA != ""})
	}
	return hosts, warns, nil
}

// nodeCA is the PEM nodes trust for a bridge route: caFile when given,
// else the minting CA (serve.ca_cert), else the top of serve.cert's chain.
func nodeCA(cfg *config.Config, r config.Route, caFile string) ([]byte, string, error) {
	key, file := "serve.cert", r.Serve.Cert
	if r.Serve.Minting() {
		key, file = "serve.ca_cert", r.Serve.CACert
	}
	if caFile != "" {
		key, file = "--ca", caFile
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, "", fmt.Errorf("route %s: read %s %s: %w", r.Name, key, file, err)
	}
	ca, pinned, err := nodeconfig.Anchor(data)
	if err != nil {
		return nil, "", fmt.Errorf("route %s: %s %s: %w", r.Name, key, file, err)
	}
	if pinned && caFile == "" {
		return ca, fmt.Sprintf("route %s: serve.cert holds no CA, so nodes trust that certificate itself and need new files when it is renewed: pass --ca with its issuer", r.Name), nil
	}
	return ca, "", nil
}

// tlsPort is the port nodes dial: 443 when a TLS listener has it, else
// the first listener's.
func tlsPort(listeners []string) int {
	first := 0
	for _, l := range listeners {
		_, p, err := net.SplitHostPort(l)
		n, _ := strconv.Atoi(p)
		if err != nil || n == 0 {
			continue
		}
		if n == nodeconfig.DefaultPort {
			return n
		}
		if first == 0 {
			first = n
		}
	}
	if first == 0 {
		return nodeconfig.DefaultPort
	}
	return first
}

// dnsServers are the gateways' DNS responders as a node reaches them, on
// listen.dns's port (left out when 53): every dns.answer address when
// listen.dns binds every address, or one of them (each gateway bound to
// its own address, the configuration otherwise the same: all of them
// serve DNS); only the bound address, with a warning, when that is none
// of dns.answer (the other gateways' DNS addresses are not known here).
func dnsServers(listen string, answers []netip.Addr) ([]string, string) {
	if listen == "" {
		return nil, ""
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, ""
	}
	addrs, warn := answers, ""
	if a, err := netip.ParseAddr(host); err == nil && !a.IsUnspecified() && !slices.Contains(answers, a.Unmap()) {
		addrs = []netip.Addr{a}
		warn = fmt.Sprintf("listen.dns %s is none of dns.answer: the resolved drop-in names only it; add the other gateways' DNS addresses to its DNS= line", listen)
	}
	var out []string
	for _, a := range addrs {
		if port == "53" {
			out = append(out, a.String())
		} else {
			out = append(out, netip.AddrPortFrom(a, uint16(portNumber(port))).String())
		}
	}
	return out, warn
}

func portNumber(p string) int {
	n, _ := strconv.Atoi(p)
	return n
}

// WriteNodeConfig is `snigate node-config`: the node files of the
// configuration at path, merged with what dir holds and written there,
// then a summary of what goes where (and the warnings) on w.
func WriteNodeConfig(path, dir string, opt NodeOptions, w io.Writer) error {
	nc, warns, err := NodeConfig(path, opt)
	if err != nil {
		return err
	}
	files, err := nodeconfig.Build(nc, nodeconfig.ReadDir(dir))
	if err != nil {
		return err
	}
	if err := nodeconfig.Write(dir, files); err != nil {
		return err
	}
	if err := nodeconfig.WriteSummary(w, dir, opt.Runtime, files); err != nil {
		return err
	}
	for _, warn := range warns {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	return nil
}
