package gateway

import (
	"reflect"
	"testing"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/httpverify"
	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// TestConfigDefaultsMatchPackages: each default the configuration fills
// in is also the default of the package that uses the value (for its
// zero Config field). internal/config imports no snigate package, so the
// two are written apart; before this test nothing tied them, and changing
// one side would have made `snigate check` print a default that a
// library user of the package does not get.
func TestConfigDefaultsMatchPackages(t *testing.T) {
	tests := []struct {
		name        string
		config, pkg any
	}{
		{"timeouts.client_hello", config.DefaultClientHelloTimeout, sni.DefaultClientHelloTimeout},
		{"timeouts.connect", config.DefaultConnectTimeout, sni.DefaultConnectTimeout},
		{"timeouts.idle", config.DefaultIdleTimeout, sni.DefaultIdleTimeout},
		{"timeouts.first_request", config.DefaultFirstRequest, sni.DefaultFirstRequestTimeout},
		{"routes[].max_dials", config.DefaultMaxDials, sni.DefaultMaxDials},
		{"routes[].max_dials_per_client", config.DefaultMaxDialsPerClient, sni.DefaultMaxDialsPerClient},
		{"routes[].dial_rate_per_client", config.DefaultDialRatePerClient, sni.DefaultDialRatePerClient},
		{"max_connections", config.DefaultMaxConnections, sni.DefaultMaxConnections},
		{"dns.ttl", config.DefaultDNSTTL, dnsresponder.DefaultTTL},
		{"routes[].balance", config.DefaultBalance, string(upstream.DefaultBalance)},
		{"routes[].health.path", config.DefaultHealthPath, upstream.DefaultPath},
		{"routes[].health.expect_status", config.DefaultExpectStatus(), upstream.DefaultExpectStatus()},
		{"routes[].health.interval", config.DefaultHealthInterval, upstream.DefaultInterval},
		{"routes[].health.timeout", config.DefaultHealthTimeout, upstream.DefaultTimeout},
		{"routes[].health.fall", config.DefaultHealthFall, upstream.DefaultFall},
		{"routes[].health.rise", config.DefaultHealthRise, upstream.DefaultRise},
		{"listen.admin unix prefix", config.AdminUnixPrefix, admin.UnixPrefix},
		{"dns.answer_check.interval", config.DefaultAnswerCheckInterval, dnsresponder.DefaultAnswerCheckInterval},
		{"dns.answer_check.timeout", config.DefaultAnswerCheckTimeout, dnsresponder.DefaultAnswerCheckTimeout},
		{"dns.answer_check.fall", config.DefaultAnswerCheckFall, dnsresponder.DefaultAnswerCheckFall},
		{"dns.answer_check.rise", config.DefaultAnswerCheckRise, dnsresponder.DefaultAnswerCheckRise},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.config, tt.pkg) {
				t.Errorf("config default %v (%T), package default %v (%T): give them one value", tt.config, tt.config, tt.pkg, tt.pkg)
			}
		})
	}
}

// TestConfigEnumsMatchPackages: the enum values the configuration accepts
// are the package constants the gateway converts them to with a plain
// cast (sni.Mode(rc.Mode), upstream.Balance(rc.Balance),
// upstream.CheckKind(h.Check)); a value spelt differently on one side
// would reach the package as an unknown value.
func TestConfigEnumsMatchPackages(t *testing.T) {
	tests := []struct {
		name        string
		config, pkg string
	}{
		{"mode bridge", config.ModeBridge, string(sni.ModeBridge)},
		{"mode splice", config.ModeSplice, string(sni.ModeSplice)},
		{"balance roundrobin", config.BalanceRoundRobin, string(upstream.RoundRobin)},
		{"balance leastconn", config.BalanceLeastConn, string(upstream.LeastConn)},
		{"health.check tcp", config.CheckTCP, string(upstream.CheckTCP)},
		{"health.check tls", config.CheckTLS, string(upstream.CheckTLS)},
		{"health.check http", config.CheckHTTP, string(upstream.CheckHTTP)},
		{"proxy_protocol none", "", sni.ProxyProtocolNone},
		{"proxy_protocol v1", config.ProxyProtocolV1, sni.ProxyProtocolV1},
		{"proxy_protocol v2", config.ProxyProtocolV2, sni.ProxyProtocolV2},
		{"verify.mode enforce", config.VerifyEnforce, httpverify.ModeEnforce},
		{"verify.mode audit", config.VerifyAudit, httpverify.ModeAudit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.config != tt.pkg {
				t.Errorf("config value %q, package value %q: give them one spelling", tt.config, tt.pkg)
			}
		})
	}
}
