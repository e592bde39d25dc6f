package gateway

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/internal/config"
)

// ExposureWarnings are the settings of cfg that open the gateway to more
// clients than it likely means to serve: choices that can be deliberate,
// so `check` and `run` both warn (each at its key) and neither refuses.
//
//   - listen.dns on a non-loopback address with dns.forward and neither
//     listen.allow nor dns.allow: an open resolver, which forwards any
//     name for anyone (amplification, cache snooping);
//   - listen.admin on a non-loopback address: the runtime API is
//     unauthenticated;
//   - a bridge route that presents upstream_tls.cert, with no http:
//     section, no serve.client_ca and listen.allow empty while listen.tls
//     is reachable from other hosts: it lends the edge identity to every
//     client for any request.
func ExposureWarnings(cfg *config.Config) []*config.Error {
	var out []*config.Error
	l := cfg.Listen
	if l.DNS != "" && !loopbackListener(l.DNS) && len(cfg.DNS.Forward) > 0 && len(cfg.DNSAllow()) == 0 {
		out = append(out, cfg.ErrorAt("listen.dns", "%s is not a loopback address and dns.forward is set, with neither listen.allow nor dns.allow: "+
			"an open resolver, which forwards any name for anyone on the network (amplification, cache snooping); "+
			`set listen.allow (or dns.allow) to the nodes' networks, such as ["10.0.0.0/8"]`, l.DNS))
	}
	if out = append(out, adminWarning(cfg)...); len(l.Allow) > 0 || allLoopback(l.TLS) {
		return out
	}
	for i, r := range cfg.Routes {
		if r.Mode != config.ModeBridge || r.HTTP != nil || r.UpstreamTLS.Cert == "" || r.Serve.ClientCA != "" {
			continue
		}
		out = append(out, cfg.ErrorAt(fmt.Sprintf("routes[%d]", i), "bridge route %q has no http: section and listen.allow is empty: "+
			"it presents the edge identity (upstream_tls.cert) to the registry for every client that reaches listen.tls, for any request; "+
			`set listen.allow to the nodes' networks, such as ["10.0.0.0/8"], and add http: {} for its method and repository policy (or serve.client_ca)`, r.Name))
	}
	return out
}

// adminWarningText is what run logs, and check prints, for listen.admin on
// a non-loopback address.
const adminWarningText = "the admin API is unauthenticated and listens on a non-loopback address; restrict who can reach it (firewall, NetworkPolicy) or use 127.0.0.1 or unix:/run/snigate/admin.sock"

func adminWarning(cfg *config.Config) []*config.Error {
	if cfg.Listen.Admin == "" || admin.IsLoopbackAddr(cfg.Listen.Admin) {
		return nil
	}
	return []*config.Error{cfg.ErrorAt("listen.admin", "%s: %s", cfg.Listen.Admin, adminWarningText)}
}

// loopbackListener reports whether a host:port listener accepts only
// from this host: its host is localhost or a loopback address.
func loopbackListener(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

func allLoopback(addrs []string) bool {
	for _, a := range addrs {
		if !loopbackListener(a) {
			return false
		}
	}
	return len(addrs) > 0
}
