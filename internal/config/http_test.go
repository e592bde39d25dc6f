package config

import (
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHTTPSection(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	tests := []struct {
		name string
		http string // the lines of the http: section, or "" for none
		want *HTTP
	}{
		{name: "absent", want: nil},
		{name: "defaults", http: "    http: {}\n", want: &HTTP{Forwarded: true, Methods: []string{"GET", "HEAD"}, Redirects: "follow", UpstreamProtocol: "auto"}},
		{name: "everything", http: `    http:
      forwarded: false
      methods: [get, HEAD, put, PATCH, POST]
      repositories: ["team/app", "team/*", "team/**", "library/alpine"]
      audit_log: audit.log
      redirects: pass
      upstream_protocol: http1
      cache: {dir: cache, max_size: 50GiB, offline: true}
`, want: &HTTP{Forwarded: false, Methods: []string{"GET", "HEAD", "PUT", "PATCH", "POST"},
			Repositories: []string{"team/app", "team/*", "team/**", "library/alpine"},
			AuditLog:     filepath.Join(dir, "audit.log"), Redirects: "pass", UpstreamProtocol: "http1",
			Cache: &Cache{Dir: filepath.Join(dir, "cache"), MaxSize: 50 << 30, Offline: true}}},
		{name: "upstream_protocol h2", http: "    http: {upstream_protocol: h2}\n",
			want: &HTTP{Forwarded: true, Methods: []string{"GET", "HEAD"}, Redirects: "follow", UpstreamProtocol: "h2"}},
		{name: "upstream_protocol auto", http: "    http: {upstream_protocol: auto}\n",
			want: &HTTP{Forwarded: true, Methods: []string{"GET", "HEAD"}, Redirects: "follow", UpstreamProtocol: "auto"}},
		{name: "redirect_allow", http: "    http: {redirect_allow: [\"10.20.0.0/16\", 127.0.0.1, \"fd00::/8\"]}\n",
			want: &HTTP{Forwarded: true, Methods: []string{"GET", "HEAD"}, Redirects: "follow", UpstreamProtocol: "auto", RedirectAllow: []netip.Prefix{
				netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("fd00::/8")}}},
		{name: "stdout audit, default cache size", http: "    http: {audit_log: \"-\", cache: {dir: /var/cache/x}}\n",
			want: &HTTP{Forwarded: true, Methods: []string{"GET", "HEAD"}, Redirects: "follow", UpstreamProtocol: "auto", AuditLog: "-",
				Cache: &Cache{Dir: "/var/cache/x", MaxSize: DefaultCacheMaxSize}}},
		{name: "tags and pin", http: "    http: {repositories: [\"team/**\"], cache: {dir: /var/cache/x, offline: true, tags: 24h, pin: [\"team/app:v1.2\", \"team/base@sha256:" + strings.Repeat("a", 64) + "\"]}}\n",
			want: &HTTP{Forwarded: true, Methods: []string{"GET", "HEAD"}, Redirects: "follow", UpstreamProtocol: "auto", Repositories: []string{"team/**"},
				Cache: &Cache{Dir: "/var/cache/x", MaxSize: DefaultCacheMaxSize, Offline: true, Tags: 24 * time.Hour,
					Pin: []string{"team/app:v1.2", "team/base@sha256:" + strings.Repeat("a", 64)}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(minimalBridge+tc.http))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Routes[0].HTTP; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("HTTP = %+v (cache %+v), want %+v", got, cacheOf(got), tc.want)
			}
		})
	}
}

func cacheOf(h *HTTP) *Cache {
	if h == nil {
		return nil
	}
	return h.Cache
}

// httpSectionErrorCases are http sections Parse refuses and the errors, line and key included.
var httpSectionErrorCases = []struct {
	name, yaml string
	want       []string
}{
	{name: "splice route", yaml: minimalSplice + "    http: {}\n", want: []string{
		"snigate.yaml:8: routes[0].http: only allowed in bridge mode (this route is mode: splice); remove it or use mode: bridge",
	}},
	{name: "unknown method", yaml: minimalBridge + "    http: {methods: [GET, FETCH]}\n", want: []string{
		`snigate.yaml:10: routes[0].http.methods[1]: want one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, got "FETCH" (did you mean "PATCH"?)`,
	}},
	{name: "empty methods", yaml: minimalBridge + "    http: {methods: []}\n", want: []string{
		"snigate.yaml:10: routes[0].http.methods: required: one or more methods such as [GET, HEAD]; remove the key for the read-only default",
	}},
	{name: "bad repository", yaml: minimalBridge + "    http: {repositories: [Team/App, \"a/**/b\", \"x//y\"]}\n", want: []string{
		`snigate.yaml:10: routes[0].http.repositories[0]: want a repository name such as "team/app" (lower case letters, digits, ".", "_", "-" between them, "/" between segments), with "*" for one segment or a last "**" for any depth, got "Team/App"`,
		`snigate.yaml:10: routes[0].http.repositories[1]: "**" may only be the last segment: want a repository name such as "team/app" (lower case letters, digits, ".", "_", "-" between them, "/" between segments), with "*" for one segment or a last "**" for any depth, got "a/**/b"`,
		`snigate.yaml:10: routes[0].http.repositories[2]: want a repository name such as "team/app" (lower case letters, digits, ".", "_", "-" between them, "/" between segments), with "*" for one segment or a last "**" for any depth, got "x//y"`,
	}},
	{name: "redirects", yaml: minimalBridge + "    http: {redirects: none}\n", want: []string{
		`snigate.yaml:10: routes[0].http.redirects: want one of follow, pass, got "none"`,
	}},
	{name: "upstream_protocol unknown", yaml: minimalBridge + "    http: {upstream_protocol: http2}\n", want: []string{
		`snigate.yaml:10: routes[0].http.upstream_protocol: want one of auto, http1, h2, got "http2" (did you mean "http1"?)`,
	}},
	{name: "upstream_protocol not a scalar", yaml: minimalBridge + "    http:\n      upstream_protocol: [http1]\n", want: []string{
		`snigate.yaml:11: routes[0].http.upstream_protocol: want one of auto, http1, h2, got a list`,
	}},
	{name: "upstream_protocol empty", yaml: minimalBridge + "    http: {upstream_protocol: \"\"}\n", want: []string{
		`snigate.yaml:10: routes[0].http.upstream_protocol: want one of auto, http1, h2, got ""`,
	}},
	{name: "redirect_allow not a CIDR", yaml: minimalBridge + "    http: {redirect_allow: [10.20.0.0/16, storage.local]}\n", want: []string{
		`snigate.yaml:10: routes[0].http.redirect_allow[1]: want a CIDR such as "10.0.0.0/8", got "storage.local"`,
	}},
	{name: "redirect_allow not a list", yaml: minimalBridge + "    http: {redirect_allow: 10.0.0.0/8}\n", want: []string{
		`snigate.yaml:10: routes[0].http.redirect_allow: want a list such as ["10.0.0.0/8"], got "10.0.0.0/8"`,
	}},
	{name: "redirect_allow with redirects pass", yaml: minimalBridge + "    http: {redirects: pass, redirect_allow: [127.0.0.0/8]}\n", want: []string{
		`snigate.yaml:10: routes[0].http.redirect_allow: only used with redirects: follow; remove it, or set redirects: follow`,
	}},
	{name: "forwarded", yaml: minimalBridge + "    http: {forwarded: yes please}\n", want: []string{
		`snigate.yaml:10: routes[0].http.forwarded: want true or false, got "yes please"`,
	}},
	{name: "audit log directory", yaml: minimalBridge + "    http: {audit_log: /nonexistent/dir/audit.log}\n", want: []string{
		"snigate.yaml:10: routes[0].http.audit_log: the directory /nonexistent/dir does not exist: create it, or name a file in an existing directory",
	}},
	{name: "cache without dir", yaml: minimalBridge + "    http: {cache: {max_size: 1GiB}}\n", want: []string{
		"snigate.yaml:10: routes[0].http.cache.dir: required: the directory of the cache, such as /var/cache/snigate/registry",
	}},
	{name: "cache size", yaml: minimalBridge + "    http: {cache: {dir: c, max_size: 5 apples}}\n", want: []string{
		`snigate.yaml:10: routes[0].http.cache.max_size: want a size such as "50GiB" (B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB), more than 0, got "5 apples"`,
	}},
	{name: "cache unknown key", yaml: minimalBridge + "    http: {cache: {dir: c, size: 1}}\n", want: []string{
		"snigate.yaml:10: routes[0].http.cache.size: unknown key; allowed here: dir, max_size, offline, tags, pin, shared",
	}},
	{name: "cache tags", yaml: minimalBridge + "    http: {cache: {dir: c, tags: 24}}\n", want: []string{
		`snigate.yaml:10: routes[0].http.cache.tags: want a duration such as "24h", got "24"`,
	}},
	{name: "pin not a reference", yaml: minimalBridge + "    http: {cache: {dir: c, pin: [team/app, \"Team/app:v1\"]}}\n", want: []string{
		`snigate.yaml:10: routes[0].http.cache.pin[0]: want repository:tag or repository@digest, such as "team/app:v1.2" or "team/app@sha256:<64 hex>", got "team/app"`,
		`snigate.yaml:10: routes[0].http.cache.pin[1]: want repository:tag or repository@digest, such as "team/app:v1.2" or "team/app@sha256:<64 hex>", got "Team/app:v1"`,
	}},
	{name: "pin with the host", yaml: minimalBridge + "    http: {cache: {dir: c, pin: [a.example.com/team/app:v1]}}\n", want: []string{
		`snigate.yaml:10: routes[0].http.cache.pin[0]: "a.example.com/team/app:v1" starts with the registry's host name a.example.com: pin names the repository without it; write "team/app:v1"`,
	}},
	{name: "pin outside repositories", yaml: minimalBridge + "    http: {repositories: [team/*], cache: {dir: c, pin: [other/app:v1, team/app:v1, team/app:v1]}}\n", want: []string{
		`snigate.yaml:10: routes[0].http.cache.pin[0]: "other/app:v1" is outside http.repositories (team/*): the route refuses it; add its repository there, or remove the pin`,
		`snigate.yaml:10: routes[0].http.cache.pin[2]: "team/app:v1" is listed twice (first at line 10)`,
	}},
	{name: "one cache dir for two routes", yaml: minimalBridge + "    http: {cache: {dir: c}}\n" + `  - name: s
    sni: [b.example.com]
    mode: bridge
    upstreams: ["10.0.0.2:443"]
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: client.crt, key: client.key, ca: ca.crt}
    http: {cache: {dir: ./c/}}
`, want: []string{
		`snigate.yaml:17: routes[1].http.cache.dir: c is already the cache directory of route "r"; give each route a directory of its own`,
	}},
}

func TestHTTPSectionErrors(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	for _, tc := range httpSectionErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseInDir(t, dir, tc.yaml)
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir+"/", "")
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true}, {"50GiB", 50 << 30, true}, {"500MB", 500e6, true}, {"1 TiB", 1 << 40, true},
		{"10B", 10, true}, {"", 0, false}, {"GiB", 0, false}, {"5gb", 0, false}, {"-1GiB", 0, false},
		{"99999999999TiB", 0, false}, {"1.5GiB", 0, false}, {"2PiB", 2 << 50, true}, {"3PB", 3e15, true}, {"8192PiB", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParseSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
