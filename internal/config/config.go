package config

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"time"
)

// Defaults filled in by Parse for keys the file leaves out. The packages
// that use a value export the same default (this package imports none of
// them); internal/gateway's TestConfigDefaultsMatchPackages and
// TestConfigEnumsMatchPackages check that both sides agree.
const (
	DefaultClientHelloTimeout = 5 * time.Second  // timeouts.client_hello
	DefaultConnectTimeout     = 5 * time.Second  // timeouts.connect
	DefaultIdleTimeout        = time.Hour        // timeouts.idle
	DefaultFirstRequest       = 10 * time.Second // timeouts.first_request, as sni.DefaultFirstRequestTimeout
	DefaultDrainTimeout       = 30 * time.Second // timeouts.drain
	DefaultMaxConnections     = 10000            // max_connections
	DefaultDNSTTL             = 30 * time.Second // dns.ttl
	DefaultDNSPort            = "53"             // port of a dns.forward entry written without one
	DefaultBalance            = BalanceRoundRobin
	DefaultHealthPath         = "/v2/"          // health.path
	DefaultHealthInterval     = 3 * time.Second // health.interval
	DefaultHealthTimeout      = 2 * time.Second // health.timeout
	DefaultHealthFall         = 3               // health.fall
	DefaultHealthRise         = 2               // health.rise
	DefaultMaxDials           = 64              // routes[].max_dials (bridge), as sni.DefaultMaxDials
	DefaultMaxDialsPerClient  = 8               // routes[].max_dials_per_client (bridge), as sni.DefaultMaxDialsPerClient
	DefaultDialRatePerClient  = 32              // routes[].dial_rate_per_client (bridge), as sni.DefaultDialRatePerClient
)

// DefaultExpectStatus returns the default health.expect_status, [200, 401]
// (a registry answers GET /v2/ with 401 when it wants a token). It returns
// a new slice on each call.
func DefaultExpectStatus() []int { return []int{200, 401} }

// Values of route.mode.
const (
	ModeBridge = "bridge" // terminate the client's TLS, open a new TLS session upstream
	ModeSplice = "splice" // forward the raw TCP stream
)

// Values of route.health.check.
const (
	CheckTCP  = "tcp"  // connect only; the default in splice mode
	CheckTLS  = "tls"  // full handshake; the default in bridge mode
	CheckHTTP = "http" // GET health.path over TLS, expect health.expect_status
)

// Values of route.balance.
const (
	BalanceRoundRobin = "roundrobin"
	BalanceLeastConn  = "leastconn"
)

// Values of route.proxy_protocol ("" sends no header).
const (
	ProxyProtocolV1 = "v1"
	ProxyProtocolV2 = "v2"
)

// AdminUnixPrefix starts a listen.admin value that names a unix socket:
// "unix:/run/snigate/admin.sock".
const AdminUnixPrefix = "unix:"

// Config is a validated configuration file: every default is filled in,
// every file name is absolute and every referenced file was readable and
// consistent when it was parsed.
type Config struct {
	File           string   // the file it came from, as given to Load or Parse
	Listen         Listen   // listen:
	Timeouts       Timeouts // timeouts:
	MaxConnections int      // max_connections: at least 1
	DNS            DNS      // dns: (zero Answer when the section is absent)
	DefaultRoute   string   // default_route: "" rejects unknown names; else a route's Name
	Routes         []Route  // routes: at least one
	Debug          Debug    // debug:
	Log            Log      // log:

	// MaxConnectionsPerClient is max_connections_per_client: the
	// connections one client address may hold at once; 0: no limit.
	MaxConnectionsPerClient int
	// MaxHandshakes is max_handshakes: per kind of listener (TLS,
	// CONNECT), the connections still sending their ClientHello (or
	// CONNECT request); from 1 to MaxConnections.
	MaxHandshakes int

	lines map[string]int // line of each key in the file (ErrorAt)
}

// ErrorAt returns the error for a problem with the value at key (a dotted
// path such as "routes[0].serve.cert") that was found after parsing: by
// the builders that `snigate run` and `snigate check` share, when they
// load the files the configuration names. It carries the line of key in
// the file, else of the nearest key holding it (a default has no line of
// its own), else 0.
func (c *Config) ErrorAt(key, format string, args ...any) *Error {
	line := 0
	for k := key; k != "" && line == 0; k = parentKey(k) {
		line = c.lines[k]
	}
	return &Error{File: c.File, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Listen is the listen: section. An empty address means "do not listen".
type Listen struct {
	TLS               []string       // SNI listeners, host:port (host may be empty); at least one
	Connect           string         // HTTP CONNECT listener, host:port or ""
	DNS               string         // DNS responder (UDP and TCP), host:port or ""
	Admin             string         // admin API, host:port, "unix:/abs/path" or ""
	Allow             []netip.Prefix // clients allowed on tls/connect; empty: all
	ProxyProtocolFrom []netip.Prefix // peers that must send a PROXY header; empty: none
}

// Timeouts is the timeouts: section; every value is greater than zero.
type Timeouts struct {
	ClientHello time.Duration // to receive the whole ClientHello
	Connect     time.Duration // upstream dial plus, in bridge mode, its TLS handshake
	Idle        time.Duration // a tunnel with no bytes either way is closed after this
	// FirstRequest: a bridge connection whose client sends no request
	// this long after its TLS handshake is closed.
	FirstRequest time.Duration
	Drain        time.Duration // graceful shutdown budget
}

// DNS is the dns: section.
type DNS struct {
	Answer  []netip.Addr  // addresses for routed names; empty only when the section is absent
	TTL     time.Duration // at least 1s
	Forward []string      // resolvers for other names, host:port; empty: answer REFUSED
	Names   []string      // extra names to answer for, canonical (names.Canonical)

	// Allow is dns.allow: the clients the responder answers, in place of
	// listen.allow; empty: listen.allow applies (see DNSAllow).
	Allow []netip.Prefix
	// AnswerCheck is dns.answer_check: answer only the addresses that
	// serve; nil: every address, always.
	AnswerCheck *AnswerCheck
}

// Route is one entry of routes:.
type Route struct {
	Name          string   // unique among routes
	Line          int      // line of the route in the file, for later messages
	SNI           []string // canonical names and "*." patterns; unique across all routes
	SNIKeys       []string // the key of each SNI name in the file ("routes[0].sni[2]"), for ErrorAt
	Mode          string   // ModeBridge or ModeSplice
	Upstreams     []string // host:port, at least one, no duplicates
	Balance       string   // BalanceRoundRobin or BalanceLeastConn
	ProxyProtocol string   // splice only: "", ProxyProtocolV1 or ProxyProtocolV2
	Health        Health
	Serve         Serve       // bridge only; zero in splice mode
	UpstreamTLS   UpstreamTLS // bridge only; zero in splice mode
	// MaxDials and MaxDialsPerClient, bridge only (0 in splice mode), bound
	// the upstream dials in progress of the route, in all and per client
	// address; at least 1.
	MaxDials, MaxDialsPerClient int
	// DialRatePerClient, bridge only (0 in splice mode, and for "no
	// limit"), bounds the upstream dials one client address starts per
	// second.
	DialRatePerClient int
	// HTTP, bridge only, is the http: section: nil copies bytes; set, the
	// gateway serves the node's HTTP itself (the HTTP-aware bridge).
	HTTP *HTTP
}

// Health is a route's health: section, defaults filled in.
type Health struct {
	Check        string        // CheckTCP, CheckTLS or CheckHTTP
	Path         string        // http check: the path to GET, starting with "/"
	ExpectStatus []int         // http check: statuses that mean healthy, each 100..599
	Interval     time.Duration // between the starts of two checks; at least Timeout
	Timeout      time.Duration // of one check
	Fall         int           // consecutive failures before an upstream is down, >= 1
	Rise         int           // consecutive successes before it is up again, >= 1
}

// Serve is a bridge route's serve: section: the certificate clients see.
// Exactly one pair is set; file names are absolute.
type Serve struct {
	Cert, Key     string // a fixed certificate and its key
	CACert, CAKey string // a CA that mints a leaf per SNI name
	// KeyExchanges are the TLS key exchanges the client leg accepts, as
	// tls.Config.CurvePreferences; nil: sni's default (X25519 when the
	// client sent an X25519 share, else the post-quantum hybrid).
	KeyExchanges []tls.CurveID
	// MinVersion is the lowest TLS version the client leg accepts
	// (tls.VersionTLS12 or tls.VersionTLS13); 0: TLS 1.2.
	MinVersion uint16
	// CipherSuites are the TLS 1.2 suites the client leg accepts; nil: the
	// AEAD-only default (sni.DefaultServeCipherSuites).
	CipherSuites []uint16
	// ClientCA is the PEM bundle node client certificates must chain to
	// (docs/configuration.md, "Node identity"); "": no client certificate is asked.
	ClientCA string
	// ClientNames are the identities allowed (names.CheckIdentityPattern),
	// matched against the subject CN, DNS and URI SANs; nil: any
	// certificate that chains to ClientCA. Set only with ClientCA.
	ClientNames []string
	// ClientCRL is a PEM CRL signed by a certificate of ClientCA; "":
	// none. Set only with ClientCA.
	ClientCRL string
}

// Minting reports whether the route mints its certificates from a CA.
func (s Serve) Minting() bool { return s.CACert != "" }

// UpstreamTLS is a bridge route's upstream_tls: section. File names are
// absolute.
type UpstreamTLS struct {
	Cert, Key  string // client certificate presented upstream; both or neither
	CA         string // PEM bundle to verify upstreams; "": system roots
	ServerName string // name to verify; "": the SNI the client sent
	// KeyExchanges are the TLS key exchanges offered upstream, as
	// tls.Config.CurvePreferences; nil: sni's default, crypto/tls's (the
	// post-quantum hybrid X25519MLKEM768 first) on full handshakes and
	// classical groups on resumptions.
	KeyExchanges []tls.CurveID
}

// RoutedNames returns every name the gateway answers for: the SNI names
// and patterns of all routes, then dns.names, canonical and without
// duplicates.
func (c *Config) RoutedNames() []string {
	var out []string
	seen := map[string]bool{}
	add := func(names []string) {
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	for _, r := range c.Routes {
		add(r.SNI)
	}
	add(c.DNS.Names)
	return out
}
