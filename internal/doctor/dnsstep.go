package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// dns is step "dns": NAME's A, AAAA and HTTPS answers (or its hosts file
// entry). The gateway's responder answers HTTPS (and every other type)
// with an empty NOERROR, so an HTTPS record with content means the answer
// did not come from it.
func (r *run) dns(ctx context.Context) bool {
	if a := hostsFileAddrs(r.cfg.HostsFile, r.t.host); len(a) > 0 {
		r.addrs = a
		r.report(Result{Status: OK, Step: "dns", Found: fmt.Sprintf("%s: %s (from %s)", r.t.host, joinAddrs(a), r.cfg.HostsFile)})
		return true
	}
	server := r.servers[0]
	addrs, err := resolve(ctx, server, r.t.host, r.cfg.Timeout)
	if err != nil {
		r.report(Result{Status: Fail, Step: "dns", Found: r.t.host + ": " + err.Error(), Advice: dnsAdvice(err, r.t.host)})
		return false
	}
	r.addrs = addrs
	found := fmt.Sprintf("%s: %s from %s", r.t.host, joinAddrs(addrs), server)
	https := httpsRecords(ctx, server, r.t.host, r)
	if https != "" {
		r.report(Result{Status: Warn, Step: "dns", Found: found + "; HTTPS record " + https,
			Advice: "the gateway's DNS responder answers HTTPS queries empty, so this answer came from another server: clients that use HTTPS records may connect elsewhere; send " + r.t.host + " to the gateway's DNS"})
		return true
	}
	r.report(Result{Status: OK, Step: "dns", Found: found + "; HTTPS none"})
	return true
}

// httpsRecords is the HTTPS answer for name, "" when empty (or failed:
// the A and AAAA answers are what clients use).
func httpsRecords(ctx context.Context, server, name string, r *run) string {
	in, err := query(ctx, server, name, dns.TypeHTTPS, r.cfg.Timeout)
	if err != nil || len(in.Answer) == 0 {
		return ""
	}
	var s []string
	for _, rr := range in.Answer {
		if h, ok := rr.(*dns.HTTPS); ok {
			s = append(s, strings.TrimPrefix(h.String(), h.Hdr.String()))
		}
	}
	return strings.Join(s, "; ")
}

// dnsAdvice says what to change for a failed lookup.
func dnsAdvice(err error, name string) string {
	var rc *rcodeError
	switch {
	case errors.As(err, &rc) && rc.rcode == dns.RcodeRefused:
		return "the server refuses " + name + ": if it is the gateway's responder, add " + name + " to a route's sni (or dns.names); else point the node's resolver at the gateway's DNS"
	case errors.As(err, &rc) && rc.rcode == dns.RcodeNameError:
		return "the server does not know " + name + ": point the node's resolver at the gateway's DNS responder (snigate node-config: resolved drop-in or /etc/hosts lines)"
	case errors.Is(err, errNoAnswer):
		return "add the gateway's addresses to dns.answer, or an /etc/hosts line for " + name
	}
	return "the resolver does not answer: if it is the gateway's DNS responder, snigate may be down there (systemctl status snigate; snigate ctl upstreams); else check that it runs and that the node reaches it on port 53, or pass --dns ADDR"
}
