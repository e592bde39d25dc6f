package doctor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// resolvedStubs are systemd-resolved's local listeners.
var resolvedStubs = map[string]bool{"127.0.0.53": true, "127.0.0.54": true}

// resolver is step "resolver": which servers the node asks, and whether a
// lookup of NAME can end up at one that is not the gateway's.
func (r *run) resolver(ctx context.Context) bool {
	servers, src, err := r.nameservers()
	if err != nil || len(servers) == 0 {
		r.report(Result{Status: Fail, Step: "resolver", Found: fmt.Sprintf("no nameserver (%s: %v)", src, errOrNone(err)),
			Advice: "list the gateway's DNS responder as nameserver in " + r.cfg.ResolvConf + ", or pass --dns ADDR"})
		return false
	}
	r.servers = servers
	found := fmt.Sprintf("%s (%s)", strings.Join(servers, ", "), src)
	if hf := hostsFileAddrs(r.cfg.HostsFile, r.t.host); len(hf) > 0 {
		r.report(Result{Status: OK, Step: "resolver", Found: found + fmt.Sprintf("; %s is in %s (%s), DNS is not asked for it", r.t.host, r.cfg.HostsFile, joinAddrs(hf))})
		return true
	}
	if resolvedStubs[hostOnly(servers[0])] {
		r.report(r.resolvedResult(found))
		return true
	}
	if len(servers) > 1 {
		r.report(r.agreement(ctx, found))
		return true
	}
	r.report(Result{Status: OK, Step: "resolver", Found: found})
	return true
}

func errOrNone(err error) string {
	if err == nil {
		return "none listed"
	}
	return err.Error()
}

func hostOnly(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	return h
}

// nameservers are --dns, else resolv.conf's nameserver lines, as ip:port.
func (r *run) nameservers() ([]string, string, error) {
	if r.cfg.DNS != "" {
		return []string{withPort(r.cfg.DNS, "53")}, "--dns", nil
	}
	data, err := os.ReadFile(r.cfg.ResolvConf)
	if err != nil {
		return nil, r.cfg.ResolvConf, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			if _, err := netip.ParseAddr(strings.Split(f[1], "%")[0]); err == nil {
				out = append(out, net.JoinHostPort(f[1], "53"))
			}
		}
	}
	return out, r.cfg.ResolvConf, nil
}

// withPort adds port to an address that has none.
func withPort(addr, port string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), port)
}

// agreement asks every listed nameserver for NAME: the resolver library
// moves on to the next one when the first times out, so one that answers
// differently is a way around the gateway.
func (r *run) agreement(ctx context.Context, found string) Result {
	first, firstErr := resolve(ctx, r.servers[0], r.t.host, r.cfg.Timeout)
	var differ []string
	for _, s := range r.servers[1:] {
		got, err := resolve(ctx, s, r.t.host, r.cfg.Timeout)
		switch {
		case err != nil && firstErr == nil:
			differ = append(differ, fmt.Sprintf("%s answers %v", s, err))
		case err == nil && (firstErr != nil || !sameSet(got, first)):
			differ = append(differ, fmt.Sprintf("%s answers %s", s, joinAddrs(got)))
		}
	}
	if len(differ) == 0 {
		return Result{Status: OK, Step: "resolver", Found: found + "; all answer " + r.t.host + " alike"}
	}
	return Result{Status: Fail, Step: "resolver",
		Found: fmt.Sprintf("%s; they disagree on %s: %s answers %s, %s", found, r.t.host, r.servers[0], answerText(first, firstErr), strings.Join(differ, "; ")),
		Advice: "a lookup that reaches another server bypasses the gateway: list only the gateway's DNS responder in " + r.cfg.ResolvConf +
			", or route " + r.t.host + " to it with systemd-resolved (snigate node-config's resolved.conf.d/snigate.conf)"}
}

func answerText(a []netip.Addr, err error) string {
	if err != nil {
		return err.Error()
	}
	return joinAddrs(a)
}

// resolvedResult is the resolver line under systemd-resolved: NAME is
// safe only with a "~domain" routing domain that covers it, else
// resolved may ask any link's server (or its fallback servers).
func (r *run) resolvedResult(found string) Result {
	file, domain := routingDomainFor(r.cfg.ResolvedDir, r.t.host)
	if file != "" {
		return Result{Status: OK, Step: "resolver", Found: fmt.Sprintf("%s: systemd-resolved, %s routed by ~%s in %s", found, r.t.host, domain, file)}
	}
	return Result{Status: Warn, Step: "resolver",
		Found:  found + ": systemd-resolved with no ~routing domain for " + r.t.host + ": it may send the name to any link's DNS server",
		Advice: "install snigate node-config's resolved.conf.d/snigate.conf in " + filepath.Join(r.cfg.ResolvedDir, "resolved.conf.d") + " and restart systemd-resolved"}
}

// routingDomainFor finds a "~domain" in a Domains= line of resolved.conf
// or its drop-ins that covers name; it returns the file and the domain.
func routingDomainFor(dir, name string) (file, domain string) {
	files := []string{filepath.Join(dir, "resolved.conf")}
	drop, _ := filepath.Glob(filepath.Join(dir, "resolved.conf.d", "*.conf"))
	sort.Strings(drop)
	for _, f := range append(files, drop...) {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
			if !ok || strings.TrimSpace(k) != "Domains" {
				continue
			}
			for _, d := range strings.Fields(v) {
				d = strings.TrimSuffix(strings.TrimPrefix(d, "~"), ".")
				if d != "" && (name == d || strings.HasSuffix(name, "."+d)) {
					return f, d
				}
			}
		}
	}
	return "", ""
}
