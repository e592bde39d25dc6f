package config

import (
	"net/netip"
	"strings"
)

// listen parses the listen: section; it also returns the section's fields
// for checks that involve other sections.
func (p *parser) listen(top fields) (Listen, fields) {
	f := p.mapping(top.get("listen"), "listen", top.keyLine("listen"),
		"tls", "connect", "dns", "admin", "allow", "proxy_protocol_from")
	used := map[string]string{} // address -> key that listens on it
	var l Listen
	for _, it := range p.listAt(f, "tls", `[":443"]`) {
		if a, ok := p.listenAddr(it, ":443", used); ok {
			l.TLS = append(l.TLS, a)
		}
	}
	if len(l.TLS) == 0 && !p.hasErrorAt(f.key("tls")) {
		p.errorf(f.keyLine("tls"), f.key("tls"), `required: one or more SNI listener addresses such as [":443"]`)
	}
	l.Connect = p.optionalListenAddr(f, "connect", ":3128", used)
	l.DNS = p.optionalListenAddr(f, "dns", ":53", used)
	l.Admin = p.adminAddr(f)
	l.Allow = p.prefixes(f, "allow")
	l.ProxyProtocolFrom = p.prefixes(f, "proxy_protocol_from")
	return l, f
}

// prefixes returns the CIDR list name.
func (p *parser) prefixes(f fields, name string) []netip.Prefix {
	var out []netip.Prefix
	for _, it := range p.listAt(f, name, `["10.0.0.0/8"]`) {
		if pfx, ok := p.prefix(it); ok {
			out = append(out, pfx)
		}
	}
	return out
}

// listenAddr validates a listener address and that no other listener uses it.
func (p *parser) listenAddr(it item, example string, used map[string]string) (string, bool) {
	rule := listenRule
	rule.example = example
	a, ok := p.hostPort(it, rule)
	if !ok {
		return "", false
	}
	if other, dup := used[a]; dup && !strings.HasSuffix(a, ":0") {
		p.errorf(it.node.Line, it.key, "%q is already used by %s", a, other)
		return "", false
	}
	used[a] = it.key
	return a, true
}

// optionalListenAddr returns the listener address name, "" if absent.
func (p *parser) optionalListenAddr(f fields, name, example string, used map[string]string) string {
	n := f.get(name)
	if n == nil {
		return ""
	}
	a, _ := p.listenAddr(item{node: n, key: f.key(name)}, example, used)
	return a
}

// adminAddr returns listen.admin: host:port or "unix:/absolute/path".
func (p *parser) adminAddr(f fields) string {
	n := f.get("admin")
	if n == nil {
		return ""
	}
	const want = `host:port such as "127.0.0.1:9090", or "unix:/run/snigate/admin.sock"`
	s, ok := p.scalar(n, f.key("admin"), want)
	if !ok {
		return ""
	}
	if path, isUnix := strings.CutPrefix(s, AdminUnixPrefix); isUnix {
		if !strings.HasPrefix(path, "/") || path == "/" {
			p.errorf(n.Line, f.key("admin"), "want %s, got %q (the socket path must be absolute)", want, s)
			return ""
		}
		return s
	}
	if why := checkHostPort(s, listenRule); why != "" {
		p.errorf(n.Line, f.key("admin"), "want %s, got %q (%s)", want, s, why)
		return ""
	}
	return s
}

// timeouts parses the timeouts: section.
func (p *parser) timeouts(top fields) Timeouts {
	f := p.mapping(top.get("timeouts"), "timeouts", top.keyLine("timeouts"),
		"client_hello", "connect", "idle", "drain", "first_request")
	return Timeouts{
		ClientHello:  p.durationAt(f, "client_hello", DefaultClientHelloTimeout),
		Connect:      p.durationAt(f, "connect", DefaultConnectTimeout),
		Idle:         p.durationAt(f, "idle", DefaultIdleTimeout),
		FirstRequest: p.durationAt(f, "first_request", DefaultFirstRequest),
		Drain:        p.durationAt(f, "drain", DefaultDrainTimeout),
	}
}
