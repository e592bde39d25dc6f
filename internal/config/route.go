package config

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/snigate/snigate/names"
)

var routeKeys = []string{"name", "sni", "mode", "upstreams", "balance", "proxy_protocol", "health", "serve", "upstream_tls",
	"max_dials", "max_dials_per_client", "dial_rate_per_client", "http"}

// validRouteName is what a route name may contain: it appears in metric
// labels, log lines and the runtime API's URL paths.
var validRouteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// routes parses the routes: list, then checks what spans routes: unique
// names, and each SNI name routed once.
func (p *parser) routes(top fields) []Route {
	items := p.listAt(top, "routes", "[{name: registry, sni: [...], mode: bridge, ...}]")
	if len(items) == 0 && !p.hasErrorAt("routes") {
		p.errorf(top.keyLine("routes"), "routes", "required: at least one route (name, sni, mode, upstreams)")
	}
	names := map[string]int{}     // route name -> line
	routed := map[string]string{} // canonical SNI -> "route \"x\" (line n)"
	cacheDirs := map[string]string{}
	var out []Route
	for _, it := range items {
		r, refs := p.route(it)
		p.uniqueRouteName(r, refs.name, names)
		p.uniqueSNI(&r, refs.sni, routed)
		p.uniqueCacheDir(r, refs.http, cacheDirs)
		out = append(out, r)
	}
	return out
}

// uniqueCacheDir reports a cache directory another route already uses:
// each route's cache owns its directory.
func (p *parser) uniqueCacheDir(r Route, f fields, dirs map[string]string) {
	if r.HTTP == nil || r.HTTP.Cache == nil || r.HTTP.Cache.Dir == "" {
		return
	}
	dir := filepath.Clean(r.HTTP.Cache.Dir)
	key := f.key("http") + ".cache.dir"
	if other, dup := dirs[dir]; dup {
		p.errorf(f.keyLine("http"), key, "%s is already the cache directory of %s; give each route a directory of its own", dir, other)
		return
	}
	dirs[dir] = fmt.Sprintf("route %q", r.Name)
}

// routeRefs is where a route's name and SNI names are, for checks that
// span routes.
type routeRefs struct {
	name item   // the name value
	sni  []item // each accepted SNI name, in the order of Route.SNI
	http fields // the route's mapping, for the http.cache.dir check
}

// route parses one route.
func (p *parser) route(it item) (Route, routeRefs) {
	f := p.mapping(it.node, it.key, it.node.Line, routeKeys...)
	r := Route{Line: f.line}
	var refs routeRefs
	r.Name = p.routeName(f)
	refs.name = item{key: f.key("name"), node: f.get("name")}
	r.SNI, refs.sni = p.patterns(f, "sni", `["registry.example.com", "*.registry.example.com"]`)
	p.require(f, "sni", len(r.SNI) > 0, `one or more names such as ["registry.example.com"]`)
	r.Mode = p.enumAt(f, "mode", "", modeValues...)
	p.require(f, "mode", r.Mode != "", "bridge or splice")
	r.Upstreams = p.upstreams(f)
	r.Balance = p.enumAt(f, "balance", DefaultBalance, balanceValues...)
	r.ProxyProtocol = p.proxyProtocol(f, r.Mode)
	r.Health = p.health(f, r.Mode)
	r.Serve = p.serve(f, r.Mode)
	r.UpstreamTLS = p.upstreamTLS(f, r.Mode)
	r.MaxDials, r.MaxDialsPerClient = p.dialBounds(f, r.Mode)
	r.DialRatePerClient = p.dialRate(f, r.Mode)
	r.HTTP = p.http(f, r.Mode, registryHosts(r), r.SNI)
	refs.http = f
	return r, refs
}

// registryHosts are the host names a route's registry goes by: its SNI
// names, upstream_tls.server_name and its upstreams' hosts.
func registryHosts(r Route) []string {
	hosts := append([]string(nil), r.SNI...)
	if r.UpstreamTLS.ServerName != "" {
		hosts = append(hosts, names.Canonical(r.UpstreamTLS.ServerName))
	}
	for _, u := range r.Upstreams {
		if h, _, err := net.SplitHostPort(u); err == nil {
			hosts = append(hosts, names.Canonical(h))
		}
	}
	return hosts
}

// dialBounds returns a bridge route's max_dials and max_dials_per_client:
// the upstream dials (each an mTLS handshake with the edge identity) in
// progress at once, per route and per client address.
func (p *parser) dialBounds(f fields, mode string) (perRoute, perClient int) {
	if mode == ModeSplice {
		p.notInMode(f, "max_dials", mode, ModeBridge)
		p.notInMode(f, "max_dials_per_client", mode, ModeBridge)
		return 0, 0
	}
	return p.intAt(f, "max_dials", DefaultMaxDials, 1), p.intAt(f, "max_dials_per_client", DefaultMaxDialsPerClient, 1)
}

// dialRate returns a bridge route's dial_rate_per_client: the upstream
// dials one client address may start per second; 0 is no limit.
func (p *parser) dialRate(f fields, mode string) int {
	if mode == ModeSplice {
		p.notInMode(f, "dial_rate_per_client", mode, ModeBridge)
		return 0
	}
	return p.intAt(f, "dial_rate_per_client", DefaultDialRatePerClient, 0)
}

// require records "name: required: want" unless ok or name already has an error.
func (p *parser) require(f fields, name string, ok bool, want string) {
	if !ok && !p.hasErrorAt(f.key(name)) {
		p.errorf(f.keyLine(name), f.key(name), "required: %s", want)
	}
}

// routeName returns the route's name.
func (p *parser) routeName(f fields) string {
	const want = `a name such as "registry" (letters, digits, '-', '_', '.')`
	name := p.stringAt(f, "name", want)
	p.require(f, "name", name != "", want)
	if name != "" && !validRouteName.MatchString(name) {
		p.errorf(f.keyLine("name"), f.key("name"), "want %s, got %q", want, name)
	}
	return name
}

// upstreams returns the route's upstream addresses, host:port, at least one.
func (p *parser) upstreams(f fields) []string {
	var out []string
	seen := dupChecker{}
	for _, it := range p.listAt(f, "upstreams", `["10.1.0.10:443"]`) {
		if a, ok := p.hostPort(it, upstreamRule); ok && seen.check(p, it, a) {
			out = append(out, a)
		}
	}
	p.require(f, "upstreams", len(out) > 0, `one or more addresses such as ["10.1.0.10:443"]`)
	return out
}

// proxyProtocol returns the route's proxy_protocol, which only splice
// routes may set ("" is accepted everywhere).
func (p *parser) proxyProtocol(f fields, mode string) string {
	v := p.enumAt(f, "proxy_protocol", "", proxyProtocolValues...)
	if v != "" && mode == ModeBridge {
		p.errorf(f.keyLine("proxy_protocol"), f.key("proxy_protocol"),
			"only allowed in splice mode (this route is mode: bridge); remove it or use mode: splice")
		return ""
	}
	return v
}

// notInMode records that name may not appear in a route of this mode and
// reports whether it was present.
func (p *parser) notInMode(f fields, name, mode, onlyIn string) bool {
	if _, present := f.keys[name]; !present {
		return false
	}
	p.errorf(f.keyLine(name), f.key(name), "only allowed in %s mode (this route is mode: %s); remove it or use mode: %s", onlyIn, mode, onlyIn)
	return true
}

// uniqueRouteName reports a route name used twice.
func (p *parser) uniqueRouteName(r Route, at item, names map[string]int) {
	if r.Name == "" {
		return
	}
	if first, dup := names[r.Name]; dup {
		p.errorf(at.node.Line, at.key, "duplicate route name %q (first at line %d)", r.Name, first)
		return
	}
	names[r.Name] = at.node.Line
}

// uniqueSNI reports, and drops from r, SNI names another route already
// has, and records the key of each name kept.
func (p *parser) uniqueSNI(r *Route, at []item, routed map[string]string) {
	kept := r.SNI[:0]
	for i, name := range r.SNI {
		if other, dup := routed[name]; dup {
			p.errorf(at[i].node.Line, at[i].key, "%q is already routed by %s; a name may belong to one route only", name, other)
			continue
		}
		routed[name] = fmt.Sprintf("route %q (line %d)", r.Name, at[i].node.Line)
		kept = append(kept, name)
		r.SNIKeys = append(r.SNIKeys, at[i].key)
	}
	r.SNI = kept
}

// defaultRoute returns default_route, which must name a route.
func (p *parser) defaultRoute(top fields, routes []Route) string {
	name := p.stringAt(top, "default_route", "a route name")
	if name == "" {
		return ""
	}
	var known []string
	for _, r := range routes {
		if r.Name == name {
			return name
		}
		if !contains(known, r.Name) {
			known = append(known, r.Name)
		}
	}
	p.errorf(top.keyLine("default_route"), "default_route", "no route named %q%s; routes: %s",
		name, suggest(name, known), strings.Join(known, ", "))
	return ""
}
