package config

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/snigate/snigate/oci"
)

// HTTP is a bridge route's http: section (the HTTP-aware bridge); nil
// when absent, and the route copies bytes as before.
type HTTP struct {
	Forwarded    bool     // set X-Forwarded-For & co. from the node's address; default true
	Methods      []string // allowed request methods, upper case; default GET, HEAD
	Repositories []string // allow-list patterns ("team/app", "team/*", "team/**"); empty: every repository
	AuditLog     string   // "" none, "-" standard output, else an absolute file name
	Redirects    string   // RedirectsFollow (default) or RedirectsPass
	// RedirectAllow are the addresses a followed redirect may reach
	// although they are loopback, link-local, unspecified, multicast or
	// the gateway's own; empty: none of those.
	RedirectAllow []netip.Prefix
	Cache         *Cache // nil: no cache
}

// Cache is routes[].http.cache: the content-addressed store of blobs and
// manifests by digest.
type Cache struct {
	Dir     string       // absolute; one route's only
	MaxSize int64        // bytes; least recently used content is removed beyond it
	Offline bool         // serve cached content without the registry's check when no upstream answers
	Shared  *SharedCache // nil: no shared tier
}

// http.redirects values.
const (
	RedirectsFollow = "follow"
	RedirectsPass   = "pass"
)

// DefaultCacheMaxSize is cache.max_size when absent: 10 GiB.
const DefaultCacheMaxSize int64 = 10 << 30

// DefaultMethods are http.methods when absent: a read-only bridge
// (oci.DefaultMethods).
var DefaultMethods = oci.DefaultMethods()

// knownMethods are the methods http.methods may list (oci.KnownMethods):
// those the OCI distribution API uses, plus OPTIONS.
var knownMethods = oci.KnownMethods()

// http parses a route's http: section, which only bridge routes may have.
func (p *parser) http(route fields, mode string, hosts []string) *HTTP {
	if mode == ModeSplice && p.notInMode(route, "http", mode, ModeBridge) {
		return nil
	}
	n := route.get("http")
	if n == nil {
		return nil
	}
	f := p.mapping(n, route.key("http"), route.keyLine("http"), "forwarded", "methods", "repositories", "audit_log", "redirects", "redirect_allow", "cache")
	h := &HTTP{
		Forwarded:    p.boolAt(f, "forwarded", true),
		Methods:      p.methods(f),
		Repositories: p.repositories(f, hosts),
		AuditLog:     p.auditLog(f),
		Redirects:    p.enumAt(f, "redirects", RedirectsFollow, RedirectsFollow, RedirectsPass),
		Cache:        p.cache(f),
	}
	h.RedirectAllow = p.redirectAllow(f, h.Redirects)
	return h
}

// redirectAllow returns http.redirect_allow: CIDRs (or single addresses),
// which only a route that follows redirects uses.
func (p *parser) redirectAllow(f fields, redirects string) []netip.Prefix {
	allow := p.prefixes(f, "redirect_allow")
	if f.get("redirect_allow") != nil && redirects != RedirectsFollow {
		p.errorf(f.keyLine("redirect_allow"), f.key("redirect_allow"), "only used with redirects: follow; remove it, or set redirects: follow")
	}
	return allow
}

// boolAt returns the boolean value of name, def if absent or wrong.
func (p *parser) boolAt(f fields, name string, def bool) bool {
	n := f.get(name)
	if n == nil {
		return def
	}
	s, ok := p.scalar(n, f.key(name), "true or false")
	if !ok {
		return def
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	p.errorf(n.Line, f.key(name), "want true or false, got %q", s)
	return def
}

// methods returns http.methods, upper case, default DefaultMethods.
func (p *parser) methods(f fields) []string {
	if f.get("methods") == nil {
		return append([]string(nil), DefaultMethods...)
	}
	var out []string
	seen := dupChecker{}
	for _, it := range p.listAt(f, "methods", "[GET, HEAD]") {
		s, ok := p.scalar(it.node, it.key, "an HTTP method such as GET")
		if !ok {
			continue
		}
		m := strings.ToUpper(s)
		if !contains(knownMethods, m) {
			p.errorf(it.node.Line, it.key, "want one of %s, got %q%s", strings.Join(knownMethods, ", "), s, suggest(m, knownMethods))
			continue
		}
		if seen.check(p, it, m) {
			out = append(out, m)
		}
	}
	p.require(f, "methods", len(out) > 0, "one or more methods such as [GET, HEAD]; remove the key for the read-only default")
	if len(out) > 0 && !contains(out, "GET") {
		p.errorf(f.keyLine("methods"), f.key("methods"), "want GET among the methods, got [%s]: every pull, and the GET /v2/ every client sends first, "+
			"would be refused with 405; add GET (and HEAD)", strings.Join(out, ", "))
	}
	return out
}

// repositories returns http.repositories: repository names of the OCI
// distribution specification, whose path segments may be "*" (one
// segment) or, last, "**" (any depth). A pattern may not start with one
// of hosts (the route's registry host names): a node asks for
// "team/app", never for "registry.example.com/team/app".
func (p *parser) repositories(f fields, hosts []string) []string {
	var out []string
	seen := dupChecker{}
	for _, it := range p.listAt(f, "repositories", `["team/app", "team/*", "team/**"]`) {
		s, ok := p.scalar(it.node, it.key, `a repository pattern such as "team/*"`)
		if !ok {
			continue
		}
		if msg := checkRepoPattern(s); msg != "" {
			p.errorf(it.node.Line, it.key, "%s, got %q", msg, s)
			continue
		}
		if host, rest, ok := strings.Cut(s, "/"); ok && contains(hosts, host) {
			p.errorf(it.node.Line, it.key, "%q starts with the registry's host name %s: nodes ask for repositories without it, so the pattern matches nothing and every pull is refused with 403; write %q", s, host, rest)
			continue
		}
		if seen.check(p, it, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkRepoPattern returns what is wrong with a repositories pattern, ""
// if nothing: oci.ParseRepoPattern decides, in the configuration's
// words.
func checkRepoPattern(s string) string {
	const want = `want a repository name such as "team/app" (lower case letters, digits, ".", "_", "-" between them, "/" between segments), with "*" for one segment or a last "**" for any depth`
	_, err := oci.ParseRepoPattern(s)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, oci.ErrPatternDoubleStar):
		return `"**" may only be the last segment: ` + want
	}
	return want
}

// auditLog returns http.audit_log: "-" or an absolute file name whose
// directory exists.
func (p *parser) auditLog(f fields) string {
	s := p.stringAt(f, "audit_log", `a file name, or "-" for standard output`)
	if s == "" || s == "-" {
		return s
	}
	path := p.pathAt(f, "audit_log")
	if p.skipFiles {
		return path
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		p.errorf(f.keyLine("audit_log"), f.key("audit_log"), "the directory %s does not exist: create it, or name a file in an existing directory", filepath.Dir(path))
	}
	return path
}

// cache parses http.cache.
func (p *parser) cache(h fields) *Cache {
	n := h.get("cache")
	if n == nil {
		return nil
	}
	f := p.mapping(n, h.key("cache"), h.keyLine("cache"), "dir", "max_size", "offline", "shared")
	c := &Cache{Dir: p.pathAt(f, "dir"), MaxSize: p.sizeAt(f, "max_size", DefaultCacheMaxSize), Offline: p.boolAt(f, "offline", false), Shared: p.sharedCache(f)}
	p.require(f, "dir", c.Dir != "", "the directory of the cache, such as /var/cache/snigate/registry")
	return c
}

// sizeAt returns a size in bytes: an integer with an optional unit (B,
// KB, MB, GB, TB, PB powers of 1000; KiB, MiB, GiB, TiB, PiB powers of
// 1024).
func (p *parser) sizeAt(f fields, name string, def int64) int64 {
	n := f.get(name)
	if n == nil {
		return def
	}
	const want = `a size such as "50GiB" (B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)`
	s, ok := p.scalar(n, f.key(name), want)
	if !ok {
		return def
	}
	v, ok := ParseSize(s)
	if !ok || v <= 0 {
		p.errorf(n.Line, f.key(name), "want %s, more than 0, got %q", want, s)
		return def
	}
	return v
}

// sizeUnits are the units ParseSize accepts.
var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
}

// ParseSize parses a size such as "50GiB", "500MB" or "1048576".
func ParseSize(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	mult, ok := sizeUnits[unit]
	if !ok || num == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v > (1<<63-1)/mult {
		return 0, false
	}
	return v * mult, true
}
