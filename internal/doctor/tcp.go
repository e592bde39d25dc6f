package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// tcp is step "tcp": a connection to every address NAME has. One that
// does not answer is a pull that may fail, depending on which address
// the client picks.
func (r *run) tcp(ctx context.Context) bool {
	var okAddrs, bad []string
	var firstErr error
	for _, a := range r.addrs {
		hp := net.JoinHostPort(a.String(), strconv.Itoa(r.t.port))
		if err := r.dialOnce(ctx, hp); err != nil {
			bad = append(bad, hp+": "+shortErr(err))
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		okAddrs = append(okAddrs, hp)
	}
	switch {
	case len(okAddrs) == 0:
		r.report(Result{Status: Fail, Step: "tcp", Found: strings.Join(bad, "; "), Advice: tcpAdvice(firstErr, r.addrs[0], r.t.port)})
		return false
	case len(bad) > 0:
		r.report(Result{Status: Warn, Step: "tcp", Found: "connected to " + strings.Join(okAddrs, ", ") + "; not to " + strings.Join(bad, "; "),
			Advice: "a client that picks a dead address fails or waits: remove it from dns.answer, or use dns.answer_check"})
	default:
		r.report(Result{Status: OK, Step: "tcp", Found: "connected to " + strings.Join(okAddrs, ", ")})
	}
	r.addr = okAddrs[0]
	return true
}

func (r *run) dialOnce(ctx context.Context, hp string) error {
	d := net.Dialer{Timeout: r.cfg.Timeout}
	c, err := d.DialContext(ctx, "tcp", hp)
	if err != nil {
		return err
	}
	return c.Close()
}

// shortErr drops the "dial tcp ADDR: connect:" prefix.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// tcpAdvice says what to change when no address answered.
func tcpAdvice(err error, a netip.Addr, port int) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("nothing listens on %s port %d: start snigate there (its listen.tls must include :%d), or fix the address in dns.answer", a, port, port)
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return fmt.Sprintf("the node has no route to %s: if that is the registry's own address, the resolver bypasses the gateway (see the resolver line); else open the path to the gateway", a)
	}
	return fmt.Sprintf("%s port %d does not answer: check that snigate runs there and that no firewall drops the connection (listen.allow)", a, port)
}
