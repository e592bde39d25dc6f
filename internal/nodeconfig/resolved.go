package nodeconfig

import (
	"fmt"
	"strings"
)

// resolvedDropIn is a systemd-resolved drop-in that sends the routed
// names to the gateway's DNS responder and to no other server: each name
// becomes a "~name" routing domain of the global scope, and resolved
// sends a name to the scope with the longest matching routing domain, so
// a link's DNS server (DHCP, "~.") never sees it. FallbackDNS= is emptied
// so that no compiled-in public resolver is used either.
func resolvedDropIn(c Config) []byte {
	var b strings.Builder
	b.WriteString("# snigate node-config: the routed names go to the gateway's DNS responder, and only there.\n")
	b.WriteString("# Copy to /etc/systemd/resolved.conf.d/snigate.conf, then: systemctl restart systemd-resolved\n")
	b.WriteString("[Resolve]\n")
	fmt.Fprintf(&b, "DNS=%s\n", strings.Join(c.DNSServers, " "))
	fmt.Fprintf(&b, "Domains=%s\n", strings.Join(routingDomains(c.Names), " "))
	b.WriteString("FallbackDNS=\n")
	return []byte(b.String())
}

// routingDomains turns routed names into "~name" routing domains: a
// wildcard "*.example.com" becomes "~example.com" (which covers every name
// below it); duplicates and names already covered are left out.
func routingDomains(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		d := strings.TrimPrefix(n, "*.")
		if !seen[d] {
			seen[d] = true
			out = append(out, "~"+d)
		}
	}
	return out
}
