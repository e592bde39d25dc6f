package config

import (
	"strconv"
	"strings"
)

var healthKeys = []string{"check", "path", "expect_status", "interval", "timeout", "fall", "rise"}

// defaultCheck returns the health check used when a route sets none: a
// handshake for bridge routes, a connect for splice routes ("" while the
// mode is unknown).
func defaultCheck(mode string) string {
	switch mode {
	case ModeBridge:
		return CheckTLS
	case ModeSplice:
		return CheckTCP
	}
	return ""
}

// health parses a route's health: section and fills in its defaults.
func (p *parser) health(route fields, mode string) Health {
	f := p.mapping(route.get("health"), route.key("health"), route.keyLine("health"), healthKeys...)
	h := Health{Check: p.enumAt(f, "check", defaultCheck(mode), checkValues...)}
	h.Path, h.ExpectStatus = p.httpCheck(f, h.Check)
	h.Interval = p.durationAt(f, "interval", DefaultHealthInterval)
	h.Timeout = p.durationAt(f, "timeout", DefaultHealthTimeout)
	h.Fall = p.intAt(f, "fall", DefaultHealthFall, 1)
	h.Rise = p.intAt(f, "rise", DefaultHealthRise, 1)
	p.timeoutWithinInterval(f, h, "health")
	return h
}

// httpCheck returns path and expect_status. They are validated whatever
// the check: the http check uses them, and so does `snigate check --probe`
// (docs/configuration.md's example sets them next to check: tls).
func (p *parser) httpCheck(f fields, _ string) (string, []int) {
	return p.healthPath(f), p.expectStatus(f)
}

// healthPath returns the http check's path, starting with "/".
func (p *parser) healthPath(f fields) string {
	const want = `a path such as "/v2/"`
	n := f.get("path")
	if n == nil {
		return DefaultHealthPath
	}
	s, ok := p.scalar(n, f.key("path"), want)
	if ok && !strings.HasPrefix(s, "/") {
		p.errorf(n.Line, f.key("path"), "want %s, got %q (it must start with /)", want, s)
	}
	return s
}

// expectStatus returns the HTTP statuses that mean healthy, each 100..599.
func (p *parser) expectStatus(f fields) []int {
	if f.get("expect_status") == nil {
		return DefaultExpectStatus()
	}
	var out []int
	seen := dupChecker{}
	for _, it := range p.listAt(f, "expect_status", "[200, 401]") {
		if code, ok := p.integer(it.node, it.key, 100, 599); ok && seen.check(p, it, strconv.Itoa(code)) {
			out = append(out, code)
		}
	}
	p.require(f, "expect_status", len(out) > 0, "one or more HTTP statuses such as [200, 401]")
	return out
}

// timeoutWithinInterval checks that a check's timeout is at most the
// interval between the starts of two checks (equal is valid, as in
// HAProxy, Envoy and Kubernetes probes), reporting at the key the file sets.
// section names the mapping in the message ("health", "dns.answer_check").
func (p *parser) timeoutWithinInterval(f fields, h Health, section string) {
	if h.Timeout <= h.Interval || p.hasErrorAt(f.key("timeout")) || p.hasErrorAt(f.key("interval")) {
		return
	}
	if n := f.get("timeout"); n != nil {
		p.errorf(n.Line, f.key("timeout"), "want at most %s.interval (%s), got %q", section, shortDuration(h.Interval), n.Value)
		return
	}
	n := f.get("interval")
	p.errorf(n.Line, f.key("interval"), "want at least %s.timeout (%s, the default; set timeout too for a shorter interval), got %q",
		section, shortDuration(h.Timeout), n.Value)
}
