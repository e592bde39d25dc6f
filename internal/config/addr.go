package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/snigate/snigate/names"
)

// addrRule says what an address must look like.
type addrRule struct {
	example  string // shown in messages, e.g. ":443"
	needHost bool   // the host part may not be empty
	zeroPort bool   // port 0 (any free port) is allowed, for listeners
}

var (
	listenRule   = addrRule{example: ":443", zeroPort: true}
	upstreamRule = addrRule{example: "10.1.0.10:443", needHost: true}
)

// hostPort validates it as "host:port" under rule.
func (p *parser) hostPort(it item, rule addrRule) (string, bool) {
	want := fmt.Sprintf("host:port such as %q", rule.example)
	s, ok := p.scalar(it.node, it.key, want)
	if !ok {
		return "", false
	}
	if why := checkHostPort(s, rule); why != "" {
		p.errorf(it.node.Line, it.key, "want %s, got %q (%s)", want, s, why)
		return "", false
	}
	return s, true
}

// checkHostPort returns what is wrong with s as host:port, or "".
func checkHostPort(s string, rule addrRule) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return ae.Err
		}
		return err.Error()
	}
	if host == "" && rule.needHost {
		return "missing host"
	}
	if host != "" && !validHost(host) {
		return "invalid host"
	}
	return checkPort(port, rule.zeroPort)
}

// checkPort returns what is wrong with port, or "".
func checkPort(port string, zeroOK bool) string {
	lo := 1
	if zeroOK {
		lo = 0
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < lo || n > 65535 {
		return fmt.Sprintf("the port must be a number from %d to 65535", lo)
	}
	return ""
}

// validHost reports whether h is an IP address or a DNS host name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	return names.IsHost(h)
}

// forwardAddr validates a dns.forward entry, host or host:port, and returns
// it as host:port with DefaultDNSPort filled in.
func (p *parser) forwardAddr(it item) (string, bool) {
	const want = `host or host:port such as "10.96.0.10:53"`
	s, ok := p.scalar(it.node, it.key, want)
	if !ok {
		return "", false
	}
	host, port := splitOptionalPort(s)
	why := ""
	switch {
	case host == "" || !validHost(host):
		why = "invalid host"
	default:
		why = checkPort(port, false)
	}
	if why != "" {
		p.errorf(it.node.Line, it.key, "want %s, got %q (%s)", want, s, why)
		return "", false
	}
	return net.JoinHostPort(host, port), true
}

// splitOptionalPort splits "host[:port]", "[v6]:port", "[v6]" or a bare
// IPv6 address; the port defaults to DefaultDNSPort.
func splitOptionalPort(s string) (host, port string) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String(), DefaultDNSPort
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		return h, p
	}
	if h, ok := strings.CutPrefix(s, "["); ok {
		if h, ok = strings.CutSuffix(h, "]"); ok {
			return h, DefaultDNSPort
		}
	}
	if strings.Contains(s, ":") {
		return "", "" // a malformed host:port
	}
	return s, DefaultDNSPort
}

// prefix validates it as a CIDR ("10.0.0.0/8") or a single address.
func (p *parser) prefix(it item) (netip.Prefix, bool) {
	const want = `a CIDR such as "10.0.0.0/8"`
	s, ok := p.scalar(it.node, it.key, want)
	if !ok {
		return netip.Prefix{}, false
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		p.errorf(it.node.Line, it.key, "want %s, got %q", want, s)
		return netip.Prefix{}, false
	}
	return pfx.Masked(), true
}

// ipAddr validates it as an IP address.
func (p *parser) ipAddr(it item) (netip.Addr, bool) {
	const want = `an IP address such as "192.0.2.10"`
	s, ok := p.scalar(it.node, it.key, want)
	if !ok {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		p.errorf(it.node.Line, it.key, "want %s, got %q", want, s)
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
