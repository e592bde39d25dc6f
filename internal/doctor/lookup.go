package doctor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// hostsFileAddrs are name's addresses in the hosts file (which the node's
// resolver library reads before DNS); nil when it has none.
func hostsFileAddrs(file, name string) []netip.Addr {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			continue
		}
		for _, h := range f[1:] {
			if strings.EqualFold(strings.TrimSuffix(h, "."), name) && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// errNoAnswer is a lookup that got NOERROR but no address.
var errNoAnswer = errors.New("no A or AAAA record")

// rcodeError is a DNS answer other than NOERROR.
type rcodeError struct {
	server string
	rcode  int
}

func (e *rcodeError) Error() string {
	return fmt.Sprintf("%s from %s", dns.RcodeToString[e.rcode], e.server)
}

// query asks server (ip:port) one question, over UDP, then TCP when the
// answer was truncated.
func query(ctx context.Context, server, name string, qtype uint16, timeout time.Duration) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, false)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &dns.Client{Timeout: timeout}
	in, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && in.Truncated {
		c.Net = "tcp"
		in, _, err = c.ExchangeContext(ctx, m, server)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", server, err)
	}
	if in.Rcode != dns.RcodeSuccess {
		return in, &rcodeError{server: server, rcode: in.Rcode}
	}
	return in, nil
}

// resolve asks server for name's A and AAAA records. As the node's
// resolver library does, it takes the addresses of whichever answered: a
// server that answers A but refuses AAAA (dnsmasq with only an IPv4
// address for the name) still resolves the name.
func resolve(ctx context.Context, server, name string, timeout time.Duration) ([]netip.Addr, error) {
	var out []netip.Addr
	var firstErr error
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		in, err := query(ctx, server, name, qt, timeout)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		out = append(out, addrsOf(in)...)
	}
	switch {
	case len(out) > 0:
		return out, nil
	case firstErr != nil:
		return nil, firstErr
	}
	return nil, fmt.Errorf("%w for %s from %s", errNoAnswer, name, server)
}

func addrsOf(m *dns.Msg) []netip.Addr {
	var out []netip.Addr
	for _, rr := range m.Answer {
		var ip net.IP
		switch v := rr.(type) {
		case *dns.A:
			ip = v.A
		case *dns.AAAA:
			ip = v.AAAA
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// lookup is name's addresses as the node's resolver library finds them:
// the hosts file first, then the first resolver. source says which.
func (r *run) lookup(ctx context.Context, name string) (addrs []netip.Addr, source string, err error) {
	if a := hostsFileAddrs(r.cfg.HostsFile, name); len(a) > 0 {
		return a, r.cfg.HostsFile, nil
	}
	if len(r.servers) == 0 {
		return nil, "", errors.New("no resolver")
	}
	a, err := resolve(ctx, r.servers[0], name, r.cfg.Timeout)
	return a, r.servers[0], err
}

// joinAddrs prints addresses for a line: "10.0.0.5, 10.0.0.6".
func joinAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// overlaps reports whether a and b share an address.
func overlaps(a, b []netip.Addr) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// sameSet reports whether a and b hold the same addresses.
func sameSet(a, b []netip.Addr) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.SortFunc(x, netip.Addr.Compare)
	slices.SortFunc(y, netip.Addr.Compare)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}
