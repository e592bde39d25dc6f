package config

import (
	"net/netip"
	"time"

	"github.com/snigate/snigate/names"
)

// dns parses the dns: section, required when listen.dns is set.
func (p *parser) dns(top, listen fields, l Listen) DNS {
	d := DNS{TTL: DefaultDNSTTL}
	if top.get("dns") == nil {
		if listen.get("dns") != nil {
			p.errorf(listen.keyLine("dns"), "dns", `required when listen.dns is set: a section with at least answer: ["192.0.2.10"], the address given for routed names`)
		}
		return d
	}
	f := p.mapping(top.get("dns"), "dns", top.keyLine("dns"), "answer", "ttl", "forward", "names", "allow", "answer_check")
	d.Answer = p.answers(f)
	d.Allow = p.prefixes(f, "allow")
	d.TTL = p.ttl(f)
	seen := dupChecker{}
	for _, it := range p.listAt(f, "forward", `["10.96.0.10:53"]`) {
		if a, ok := p.forwardAddr(it); ok && seen.check(p, it, a) {
			p.forwardLoop(it, a, l)
			d.Forward = append(d.Forward, a)
		}
	}
	d.Names, _ = p.patterns(f, "names", `["mirror.example.com"]`)
	d.AnswerCheck = p.answerCheck(f, l)
	return d
}

// DNSAllow is the client networks the DNS responder answers: dns.allow
// when set (not empty), else listen.allow; empty: every client. A client
// outside gets REFUSED for every query.
func (c *Config) DNSAllow() []netip.Prefix {
	if len(c.DNS.Allow) > 0 {
		return c.DNS.Allow
	}
	return c.Listen.Allow
}

// answers returns dns.answer: one or more IP addresses.
func (p *parser) answers(f fields) []netip.Addr {
	var out []netip.Addr
	seen := dupChecker{}
	for _, it := range p.listAt(f, "answer", `["192.0.2.10"]`) {
		if a, ok := p.ipAddr(it); ok && seen.check(p, it, a.String()) {
			out = append(out, a)
		}
	}
	if len(out) == 0 && !p.hasErrorAt(f.key("answer")) {
		p.errorf(f.keyLine("answer"), f.key("answer"), `required: one or more addresses given for routed names, such as ["192.0.2.10"]`)
	}
	return out
}

// ttl returns dns.ttl, at least one second.
func (p *parser) ttl(f fields) time.Duration {
	d := p.durationAt(f, "ttl", DefaultDNSTTL)
	if d < time.Second {
		n := f.get("ttl")
		p.errorf(n.Line, f.key("ttl"), "want a duration of at least 1s (DNS TTLs are whole seconds), got %q", n.Value)
		return DefaultDNSTTL
	}
	return d
}

// patterns returns the list name of server names or "*." patterns
// (names.CheckPattern) in canonical form, with the list item of each.
func (p *parser) patterns(f fields, name, example string) ([]string, []item) {
	const want = `a name such as "registry.example.com" or "*.example.com"`
	var out []string
	var items []item
	seen := dupChecker{}
	for _, it := range p.listAt(f, name, example) {
		s, ok := p.scalar(it.node, it.key, want)
		if !ok {
			continue
		}
		if err := names.CheckPattern(s); err != nil {
			p.errorf(it.node.Line, it.key, "want %s, got %q: %v", want, s, err)
			continue
		}
		c := names.Canonical(s)
		if seen.check(p, it, c) {
			out, items = append(out, c), append(items, it)
		}
	}
	return out, items
}
