package config

import (
	"net"
	"strconv"
	"time"
)

// Defaults of dns.answer_check. internal/gateway's
// TestConfigDefaultsMatchPackages checks them against dnsresponder's.
const (
	DefaultAnswerCheckPort     = 443             // when listen.tls[0] has port 0
	DefaultAnswerCheckInterval = 2 * time.Second // dns.answer_check.interval
	DefaultAnswerCheckTimeout  = time.Second     // dns.answer_check.timeout
	DefaultAnswerCheckFall     = 2               // dns.answer_check.fall
	DefaultAnswerCheckRise     = 2               // dns.answer_check.rise
)

var answerCheckKeys = []string{"port", "interval", "timeout", "fall", "rise"}

// AnswerCheck is dns.answer_check: how the DNS responder checks each
// dns.answer address (a TCP connection to Port, then a ClientHello
// answered with a ServerHello) before giving it in answers.
type AnswerCheck struct {
	Port     int           // the TLS listener port on every answer address, 1..65535
	Interval time.Duration // between the starts of two checks of one address; at least Timeout
	Timeout  time.Duration // of one check, connection and handshake
	Fall     int           // consecutive failures before an address is left out, >= 1
	Rise     int           // consecutive successes before it is given again, >= 1
}

// answerCheck parses dns.answer_check; nil when absent. Its port
// defaults to the port of listen.tls[0] (the gateways of a cluster share
// one configuration), else DefaultAnswerCheckPort.
func (p *parser) answerCheck(f fields, l Listen) *AnswerCheck {
	n := f.get("answer_check")
	if n == nil {
		return nil
	}
	g := p.mapping(n, f.key("answer_check"), f.keyLine("answer_check"), answerCheckKeys...)
	c := &AnswerCheck{
		Port:     defaultAnswerCheckPort(l),
		Interval: p.durationAt(g, "interval", DefaultAnswerCheckInterval),
		Timeout:  p.durationAt(g, "timeout", DefaultAnswerCheckTimeout),
		Fall:     p.intAt(g, "fall", DefaultAnswerCheckFall, 1),
		Rise:     p.intAt(g, "rise", DefaultAnswerCheckRise, 1),
	}
	if pn := g.get("port"); pn != nil {
		if port, ok := p.integer(pn, g.key("port"), 1, 65535); ok {
			c.Port = port
		}
	}
	p.timeoutWithinInterval(g, Health{Interval: c.Interval, Timeout: c.Timeout}, "dns.answer_check")
	return c
}

// defaultAnswerCheckPort is the port of listen.tls[0] when it names one.
func defaultAnswerCheckPort(l Listen) int {
	if len(l.TLS) == 0 {
		return DefaultAnswerCheckPort
	}
	_, port, err := net.SplitHostPort(l.TLS[0])
	if n, perr := strconv.Atoi(port); err == nil && perr == nil && n > 0 {
		return n
	}
	return DefaultAnswerCheckPort
}
