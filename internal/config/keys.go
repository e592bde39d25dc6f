package config

import "slices"

// Key is one configuration key that has a default, a closed set of
// values, or both. Keys lists every one, so that a contract test (in
// internal/gateway) can hold each to the constant of the package that
// uses the value: a key added here without its counterpart fails it.
type Key struct {
	// Path names the key as errors do ("timeouts.connect",
	// "routes[].health.fall"); a value implied by part of a key reads
	// "dns.forward[] port".
	Path string
	// Default is the value the parser fills in when the key is absent,
	// in the type of its Config field; nil: no default of its own.
	Default any
	// Values are the values the key accepts, in the order errors list
	// them ("" where absent is a value); nil: not an enum.
	Values []string
}

// The values of the enum keys, as the parser checks them.
var (
	modeValues          = []string{ModeBridge, ModeSplice}
	balanceValues       = []string{BalanceRoundRobin, BalanceLeastConn}
	checkValues         = []string{CheckTCP, CheckTLS, CheckHTTP}
	proxyProtocolValues = []string{"", ProxyProtocolV1, ProxyProtocolV2}
	redirectsValues     = []string{RedirectsFollow, RedirectsPass}
	verifyModeValues    = []string{VerifyEnforce, VerifyAudit}

	upstreamProtocolValues = []string{UpstreamAuto, UpstreamHTTP1, UpstreamH2}
)

var keys = []Key{
	{Path: "timeouts.client_hello", Default: DefaultClientHelloTimeout},
	{Path: "timeouts.connect", Default: DefaultConnectTimeout},
	{Path: "timeouts.idle", Default: DefaultIdleTimeout},
	{Path: "timeouts.first_request", Default: DefaultFirstRequest},
	{Path: "timeouts.drain", Default: DefaultDrainTimeout},
	{Path: "max_connections", Default: DefaultMaxConnections},
	{Path: "max_connections_per_client", Default: DefaultMaxConnectionsPerClient},
	{Path: "max_handshakes", Default: DefaultMaxHandshakes(DefaultMaxConnections)},
	{Path: "log.access", Default: DefaultAccessLog},
	{Path: "dns.ttl", Default: DefaultDNSTTL},
	{Path: "dns.forward[] port", Default: DefaultDNSPort},
	{Path: "dns.answer_check port", Default: DefaultAnswerCheckPort},
	{Path: "dns.answer_check.interval", Default: DefaultAnswerCheckInterval},
	{Path: "dns.answer_check.timeout", Default: DefaultAnswerCheckTimeout},
	{Path: "dns.answer_check.fall", Default: DefaultAnswerCheckFall},
	{Path: "dns.answer_check.rise", Default: DefaultAnswerCheckRise},
	{Path: "routes[].mode", Values: modeValues},
	{Path: "routes[].balance", Default: DefaultBalance, Values: balanceValues},
	{Path: "routes[].proxy_protocol", Values: proxyProtocolValues},
	{Path: "routes[].max_dials", Default: DefaultMaxDials},
	{Path: "routes[].max_dials_per_client", Default: DefaultMaxDialsPerClient},
	{Path: "routes[].dial_rate_per_client", Default: DefaultDialRatePerClient},
	{Path: "routes[].health.check", Values: checkValues},
	{Path: "routes[].health.path", Default: DefaultHealthPath},
	{Path: "routes[].health.expect_status", Default: DefaultExpectStatus()},
	{Path: "routes[].health.interval", Default: DefaultHealthInterval},
	{Path: "routes[].health.timeout", Default: DefaultHealthTimeout},
	{Path: "routes[].health.fall", Default: DefaultHealthFall},
	{Path: "routes[].health.rise", Default: DefaultHealthRise},
	{Path: "routes[].http.forwarded", Default: DefaultForwarded},
	{Path: "routes[].http.methods", Default: DefaultMethods},
	{Path: "routes[].http.redirects", Default: RedirectsFollow, Values: redirectsValues},
	{Path: "routes[].http.upstream_protocol", Default: DefaultUpstreamProtocol, Values: upstreamProtocolValues},
	{Path: "routes[].http.cache.max_size", Default: DefaultCacheMaxSize},
	{Path: "routes[].http.verify.mode", Default: VerifyEnforce, Values: verifyModeValues},
}

// Keys returns every key with a default or a closed set of values; the
// caller may modify the result.
func Keys() []Key {
	out := slices.Clone(keys)
	for i := range out {
		out[i].Values = slices.Clone(out[i].Values)
	}
	return out
}
