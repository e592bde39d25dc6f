package config

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/snigate/snigate/internal/size"
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
	// UpstreamProtocol is the protocol of the requests to the registry:
	// UpstreamAuto (default), UpstreamHTTP1 or UpstreamH2.
	UpstreamProtocol string
	// RedirectAllow are the addresses a followed redirect may reach
	// although they are loopback, link-local, unspecified, multicast or
	// the gateway's own; empty: none of those.
	RedirectAllow []netip.Prefix
	Cache         *Cache  // nil: no cache
	Auth          *Auth   // nil: the node's Authorization passes to the registry
	Verify        *Verify // nil: no signature policy
}

// Cache is routes[].http.cache: the content-addressed store of blobs and
// manifests by digest.
type Cache struct {
	Dir     string // absolute; one route's only
	MaxSize int64  // bytes; least recently used content is removed beyond it
	Offline bool   // serve cached content without the registry's check when no upstream answers
	// Tags is how long a tag's last digest answers it when no upstream
	// answers and Offline is set; 0: tags are not remembered.
	Tags time.Duration
	// Pin are images never evicted and fetched (all platforms) at start
	// and on a configuration change: "repository:tag" or
	// "repository@digest", without the registry's host. Empty: none.
	Pin []string
	// Shared is the tier shared by several gateways; nil: none.
	Shared *SharedCache
}

// http.redirects values.
const (
	RedirectsFollow = "follow"
	RedirectsPass   = "pass"
)

// http.upstream_protocol values.
const (
	UpstreamAuto  = "auto"  // the measured best (httpbridge.UpstreamAuto): now HTTP/1.1
	UpstreamHTTP1 = "http1" // a pool of keep-alive HTTP/1.1 connections
	UpstreamH2    = "h2"    // HTTP/2 where the registry offers it
	// DefaultUpstreamProtocol is http.upstream_protocol when absent.
	DefaultUpstreamProtocol = UpstreamAuto
)

// DefaultForwarded is http.forwarded when absent.
const DefaultForwarded = true

// DefaultCacheMaxSize is cache.max_size when absent: 10 GiB.
const DefaultCacheMaxSize int64 = 10 << 30

// DefaultMethods are http.methods when absent: a read-only bridge
// (oci.DefaultMethods).
var DefaultMethods = oci.DefaultMethods()

// knownMethods are the methods http.methods may list (oci.KnownMethods):
// those the OCI distribution API uses, plus OPTIONS.
var knownMethods = oci.KnownMethods()

// http parses a route's http: section, which only bridge routes may have.
func (p *parser) http(route fields, mode string, hosts, sni []string) *HTTP {
	if mode == ModeSplice && p.notInMode(route, "http", mode, ModeBridge) {
		p.authOnSplice(route)
		return nil
	}
	n := route.get("http")
	if n == nil {
		return nil
	}
	f := p.mapping(n, route.key("http"), route.keyLine("http"), "forwarded", "methods", "repositories", "audit_log", "redirects", "redirect_allow", "upstream_protocol", "cache", "auth", "verify")
	h := &HTTP{
		Forwarded:    p.boolAt(f, "forwarded", DefaultForwarded),
		Methods:      p.methods(f),
		Repositories: p.repositories(f, hosts),
		AuditLog:     p.auditLog(f),
		Redirects:    p.enumAt(f, "redirects", RedirectsFollow, redirectsValues...),
		Auth:         p.auth(f, sni),
		Verify:       p.verify(f, hosts),
	}
	h.UpstreamProtocol = p.enumAt(f, "upstream_protocol", DefaultUpstreamProtocol, upstreamProtocolValues...)
	h.Cache = p.cache(f, hosts, h.Repositories)
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
func (p *parser) cache(h fields, hosts, repositories []string) *Cache {
	n := h.get("cache")
	if n == nil {
		return nil
	}
	f := p.mapping(n, h.key("cache"), h.keyLine("cache"), "dir", "max_size", "offline", "tags", "pin", "shared")
	c := &Cache{Dir: p.pathAt(f, "dir"), MaxSize: p.sizeAt(f, "max_size", DefaultCacheMaxSize), Offline: p.boolAt(f, "offline", false),
		Tags: p.tags(f), Pin: p.pins(f, hosts, repositories), Shared: p.sharedCache(f)}
	p.require(f, "dir", c.Dir != "", "the directory of the cache, such as /var/cache/snigate/registry")
	return c
}

// tags parses cache.tags: a duration, 0 when absent.
func (p *parser) tags(f fields) time.Duration {
	n := f.get("tags")
	if n == nil {
		return 0
	}
	d, _ := p.duration(n, f.key("tags"), 24*time.Hour)
	return d
}

// pins parses cache.pin: images as repository:tag or repository@digest,
// without the registry's host, within http.repositories when it is set.
func (p *parser) pins(f fields, hosts, repositories []string) []string {
	allow, _ := oci.NewRepoAllowList(repositories) // its errors are http.repositories'
	var out []string
	seen := dupChecker{}
	for _, it := range p.listAt(f, "pin", `["team/app:v1.2", "base/debian@sha256:..."]`) {
		s, ok := p.scalar(it.node, it.key, `an image such as "team/app:v1.2"`)
		if !ok {
			continue
		}
		ref, err := oci.ParseReference(s)
		switch {
		case err != nil:
			p.errorf(it.node.Line, it.key, "%v, got %q", err, s)
			continue
		case hasHost(ref.Repository, hosts):
			host, rest, _ := strings.Cut(s, "/")
			p.errorf(it.node.Line, it.key, "%q starts with the registry's host name %s: pin names the repository without it; write %q", s, host, rest)
			continue
		case len(repositories) > 0 && !allow.Allows(ref.Repository):
			p.errorf(it.node.Line, it.key, "%q is outside http.repositories (%s): the route refuses it; add its repository there, or remove the pin", s, strings.Join(repositories, ", "))
			continue
		}
		if seen.check(p, it, ref.String()) {
			out = append(out, ref.String())
		}
	}
	return out
}

// hasHost reports whether name's first component is one of hosts.
func hasHost(name string, hosts []string) bool {
	host, _, ok := strings.Cut(name, "/")
	return ok && contains(hosts, host)
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

// ParseSize parses a size such as "50GiB", "500MB" or "1048576" with
// size.Parse, the one size grammar (and the schema's); ok is false for a
// malformed size or one below 1 byte.
func ParseSize(s string) (int64, bool) {
	v, err := size.Parse(s)
	return v, err == nil
}
