package gateway

import (
	"reflect"
	"slices"
	"testing"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/httpverify"
	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/oci"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// counterpart is what the packages say about one config.Keys() row: the
// defaults of the packages that use the value (for their zero Config
// field), the package constants the gateway casts the values to, or why
// no package has the default (the gateway uses the value itself, or the
// package's field has no default).
type counterpart struct {
	pkg        []any    // each must equal the config default
	values     []string // the packages' spelling of each allowed value, in the table's order
	configOnly string   // why there is no package default
}

// counterparts holds every config.Keys() row to its package: a row
// without an entry here fails TestConfigDefaultsMatchPackages.
var counterparts = map[string]counterpart{
	"timeouts.client_hello":         {pkg: []any{sni.DefaultClientHelloTimeout}},
	"timeouts.connect":              {pkg: []any{sni.DefaultConnectTimeout, httpbridge.DefaultConnectTimeout}},
	"timeouts.idle":                 {pkg: []any{sni.DefaultIdleTimeout}},
	"timeouts.first_request":        {pkg: []any{sni.DefaultFirstRequestTimeout}},
	"timeouts.drain":                {configOnly: "the gateway's own drain; no package drains"},
	"max_connections":               {pkg: []any{sni.DefaultMaxConnections}},
	"max_connections_per_client":    {pkg: []any{sni.DefaultMaxConnectionsPerClient}},
	"max_handshakes":                {pkg: []any{sni.DefaultMaxHandshakes}},
	"log.access":                    {configOnly: "the gateway opens the access log"},
	"dns.ttl":                       {pkg: []any{dnsresponder.DefaultTTL}},
	"dns.forward[] port":            {configOnly: "dnsresponder takes forwarders with their port"},
	"dns.answer_check port":         {configOnly: "dnsresponder takes the checked address with its port"},
	"dns.answer_check.interval":     {pkg: []any{dnsresponder.DefaultAnswerCheckInterval}},
	"dns.answer_check.timeout":      {pkg: []any{dnsresponder.DefaultAnswerCheckTimeout}},
	"dns.answer_check.fall":         {pkg: []any{dnsresponder.DefaultAnswerCheckFall}},
	"dns.answer_check.rise":         {pkg: []any{dnsresponder.DefaultAnswerCheckRise}},
	"routes[].mode":                 {values: []string{string(sni.ModeBridge), string(sni.ModeSplice)}},
	"routes[].balance":              {pkg: []any{string(upstream.DefaultBalance)}, values: []string{string(upstream.RoundRobin), string(upstream.LeastConn)}},
	"routes[].proxy_protocol":       {values: []string{sni.ProxyProtocolNone, sni.ProxyProtocolV1, sni.ProxyProtocolV2}},
	"routes[].max_dials":            {pkg: []any{sni.DefaultMaxDials}},
	"routes[].max_dials_per_client": {pkg: []any{sni.DefaultMaxDialsPerClient}},
	"routes[].dial_rate_per_client": {pkg: []any{sni.DefaultDialRatePerClient}},
	"routes[].health.check":         {values: []string{string(upstream.CheckTCP), string(upstream.CheckTLS), string(upstream.CheckHTTP)}},
	"routes[].health.path":          {pkg: []any{upstream.DefaultPath}},
	"routes[].health.expect_status": {pkg: []any{upstream.DefaultExpectStatus()}},
	"routes[].health.interval":      {pkg: []any{upstream.DefaultInterval}},
	"routes[].health.timeout":       {pkg: []any{upstream.DefaultTimeout}},
	"routes[].health.fall":          {pkg: []any{upstream.DefaultFall}},
	"routes[].health.rise":          {pkg: []any{upstream.DefaultRise}},
	"routes[].http.forwarded":       {configOnly: "httpbridge.Config.Forwarded is a plain bool (false: not set)"},
	"routes[].http.methods":         {pkg: []any{oci.DefaultMethods()}},
	"routes[].http.redirects":       {pkg: []any{httpbridge.DefaultRedirects}, values: []string{httpbridge.RedirectsFollow, httpbridge.RedirectsPass}},
	"routes[].http.verify.mode":     {pkg: []any{httpverify.ModeEnforce}, values: []string{httpverify.ModeEnforce, httpverify.ModeAudit}},
	"routes[].http.cache.max_size":  {configOnly: "regcache.Config.MaxSize is required"},

	"routes[].http.upstream_protocol": {pkg: []any{httpbridge.DefaultUpstreamProtocol},
		values: []string{httpbridge.UpstreamAuto, httpbridge.UpstreamHTTP1, httpbridge.UpstreamH2}},
}

// TestConfigDefaultsMatchPackages: each default the configuration fills
// in (config.Keys) is also the default of the package that uses the
// value (for its zero Config field). The two are written apart; before
// this test nothing tied them, and changing one side would have made
// `snigate check` print a default that a library user of the package does
// not get. A key in the table without a counterpart here fails.
func TestConfigDefaultsMatchPackages(t *testing.T) {
	for _, k := range config.Keys() {
		t.Run(k.Path, func(t *testing.T) {
			c, ok := counterparts[k.Path]
			switch {
			case !ok:
				t.Fatalf("config key %s has no package counterpart in counterparts: name the package default (or why there is none)", k.Path)
			case k.Default == nil || c.configOnly != "":
				return
			case len(c.pkg) == 0:
				t.Fatalf("config key %s has default %v but its counterpart names no package default", k.Path, k.Default)
			}
			for _, pkg := range c.pkg {
				if !reflect.DeepEqual(k.Default, pkg) {
					t.Errorf("config default %v (%T), package default %v (%T): give them one value", k.Default, k.Default, pkg, pkg)
				}
			}
		})
	}
	rows := map[string]bool{}
	for _, k := range config.Keys() {
		rows[k.Path] = true
	}
	for path := range counterparts {
		if !rows[path] {
			t.Errorf("counterpart %s names no config.Keys() row", path)
		}
	}
}

// TestConfigEnumsMatchPackages: the enum values the configuration accepts
// are the package constants the gateway converts them to with a plain
// cast (sni.Mode(rc.Mode), upstream.Balance(rc.Balance),
// upstream.CheckKind(h.Check)); a value spelt differently on one side
// would reach the package as an unknown value.
func TestConfigEnumsMatchPackages(t *testing.T) {
	for _, k := range config.Keys() {
		if k.Values == nil {
			continue
		}
		t.Run(k.Path, func(t *testing.T) {
			if pkg := counterparts[k.Path].values; !slices.Equal(k.Values, pkg) {
				t.Errorf("config values %q, package values %q: give them one spelling", k.Values, pkg)
			}
		})
	}
}

// TestConfigSpellingsMatchPackages: prefixes the configuration and a
// package both parse.
func TestConfigSpellingsMatchPackages(t *testing.T) {
	if config.AdminUnixPrefix != admin.UnixPrefix {
		t.Errorf("config value %q, package value %q: give them one spelling", config.AdminUnixPrefix, admin.UnixPrefix)
	}
}
