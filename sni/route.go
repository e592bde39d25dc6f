package sni

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/snigate/snigate/names"
	"github.com/snigate/snigate/upstream"
)

// Mode is how a route forwards a connection.
type Mode string

// Route modes (routes[].mode, docs/configuration.md).
const (
	// ModeSplice forwards the raw TCP stream; TLS stays end to end.
	ModeSplice Mode = "splice"
	// ModeBridge terminates the client's TLS and opens a new TLS session
	// to the upstream that presents the edge's client certificate.
	ModeBridge Mode = "bridge"
)

// Upstreams is what a route needs from its upstream pool: the healthy
// hosts in the order to try them. *upstream.Pool implements it.
type Upstreams interface {
	Candidates() []*upstream.Host
}

// certSource serves the certificate a bridge route presents to clients
// (certinel's shape: internal/certs' KeyPair and Minter, or a test fake).
type certSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// Route is one entry of the routing table. Fill the exported fields, pass
// the route to NewTable, and do not change it afterwards: the table
// prepares per-route state (the upstream TLS session cache, the serving
// TLS configuration) on it.
type Route struct {
	Name string   // unique; the "route" label of logs and metrics
	SNI  []string // exact names or one-label wildcards ("*.example.com")
	Mode Mode     // ModeSplice or ModeBridge
	Pool Upstreams

	// ProxyProtocol, splice only: "" (none), "v1" or "v2": a PROXY header
	// carrying the original client address is sent to the upstream first.
	ProxyProtocol string

	// Serve, bridge only: the certificate presented to clients.
	Serve certSource
	// ServeKeyExchanges, bridge only: the key exchanges the client leg
	// accepts (tls.Config.CurvePreferences of the handshake with the
	// node), used as crypto/tls uses that list (a listed hybrid the node
	// offers is taken first). nil: X25519 (or another classical group)
	// when the node sent a key share for it, else crypto/tls's default,
	// which takes the post-quantum hybrid X25519MLKEM768: a node that
	// sends only a hybrid share gets the hybrid, and no node needs a
	// HelloRetryRequest (README, "Bridge key exchange and resumption").
	ServeKeyExchanges []tls.CurveID
	// ServeMinVersion, bridge only: the lowest TLS version the client leg
	// accepts; 0 (or less than TLS 1.2): TLS 1.2.
	ServeMinVersion uint16
	// ServeCipherSuites, bridge only: the TLS 1.2 suites the client leg
	// accepts; nil: DefaultServeCipherSuites (AEAD only).
	ServeCipherSuites []uint16
	// UpstreamTLS, bridge only: the template of the client configuration
	// for the upstream leg (RootCAs, GetClientCertificate, ServerName; ""
	// means the SNI the client sent). nil means system roots, no client
	// certificate. It is cloned; ClientSessionCache, NextProtos and
	// MinVersion are set by snigate (one session cache per route). Its
	// CurvePreferences, when nil, are crypto/tls's default (the
	// post-quantum hybrid) on a full handshake and classical groups only
	// when the dial holds a session to resume (README, "Bridge key
	// exchange and resumption"); the same holds for UpstreamTLSFunc's.
	UpstreamTLS *tls.Config
	// UpstreamTLSFunc, bridge only, when set, replaces UpstreamTLS: it is
	// called once per upstream dial and returns a configuration that dial
	// owns (certinel-style rotation of the client certificate and trust).
	// Its ClientSessionCache, when set, stores the dial's sessions instead
	// of the route's cache, so that it can scope them to the certificate
	// and trust they were made with. NextProtos and MinVersion are set by
	// snigate, and ServerName when "".
	UpstreamTLSFunc func() *tls.Config
	// ClientAuth, bridge only: the client certificate nodes must present
	// (node identity); nil: none is asked.
	ClientAuth *ClientAuth
	// Handler, bridge only, when set, serves the terminated node
	// connections itself: no upstream is dialed per connection, and
	// UpstreamTLS and UpstreamTLSFunc are unused.
	Handler BridgeHandler
	// MaxDials, bridge only, bounds the route's upstream dials in progress
	// (each an upstream TLS handshake with the edge identity); a dial over
	// it waits up to DialQueueWait, then the connection is refused with
	// result "dial_limit". 0: DefaultMaxDials; negative: no bound.
	MaxDials int
	// MaxDialsPerClient, bridge only, bounds them per client address in
	// the same way. 0: DefaultMaxDialsPerClient; negative: no bound.
	MaxDialsPerClient int
	// DialRatePerClient, bridge only, bounds the upstream dials one client
	// address starts per second (a token bucket, bursts of as many); a
	// dial over it waits for its turn when that comes within
	// DialQueueWait, else the connection is refused with result
	// "dial_limit". 0: DefaultDialRatePerClient; negative: no bound.
	DialRatePerClient int

	once     sync.Once
	sessions tls.ClientSessionCache // upstream leg, per route
	serveTLS *tls.Config            // client leg, shared so that ticket keys persist
	tickets  ticketKeys             // serveTLS's, rotated every TicketKeyRotation
	alpn     alpnMemory             // what each upstream chose for each ALPN list
	declines declineMemory          // upstreams that declined a classical resumption
	dials    dialSlots              // upstream dials in progress
	dialWait time.Duration          // tests: replaces DialQueueWait when set
	metrics  routeMetricsCache
}

// sessionCacheSize is the number of upstream TLS sessions kept per route
// (per upstream address and server name).
const sessionCacheSize = 256

// prepare builds the per-route state once.
func (r *Route) prepare() {
	r.once.Do(func() {
		if r.Mode != ModeBridge {
			return
		}
		r.sessions = tls.NewLRUClientSessionCache(sessionCacheSize)
		r.tickets.every = TicketKeyRotation
		r.dials.max = orDefault(r.MaxDials, DefaultMaxDials)
		r.dials.perClient = orDefault(r.MaxDialsPerClient, DefaultMaxDialsPerClient)
		r.dials.wait = cmp.Or(r.dialWait, DialQueueWait)
		r.dials.rate.perSecond = orDefault(r.DialRatePerClient, DefaultDialRatePerClient)
		r.serveTLS = &tls.Config{
			MinVersion:         tls.VersionTLS12,
			GetConfigForClient: bridgeConfigForClient,
		}
	})
}

// orDefault is n, or def when n is 0.
func orDefault(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// Table maps server names to routes. Build it with NewTable; it is
// immutable and safe for concurrent use.
type Table struct {
	patterns names.Table[*Route]
	def      *Route
	routes   []*Route
}

// NewTable validates routes and builds the table. defaultRoute names the
// route for a ClientHello whose SNI matches nothing or is absent; ""
// rejects such connections with an unrecognized_name alert. All problems
// found are returned together.
func NewTable(routes []*Route, defaultRoute string) (*Table, error) {
	t := &Table{routes: routes}
	var errs []error
	byName := make(map[string]*Route, len(routes))
	for i, r := range routes {
		if err := validateRoute(r); err != nil {
			errs = append(errs, fmt.Errorf("routes[%d] %q: %w", i, routeName(r), err))
			continue
		}
		if byName[r.Name] != nil {
			errs = append(errs, fmt.Errorf("routes[%d] %q: route name used twice", i, r.Name))
		}
		byName[r.Name] = r
		errs = append(errs, t.addNames(i, r)...)
	}
	if defaultRoute != "" {
		if t.def = byName[defaultRoute]; t.def == nil {
			errs = append(errs, fmt.Errorf("default route %q: no route has that name", defaultRoute))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, r := range routes {
		r.prepare()
	}
	return t, nil
}

func routeName(r *Route) string {
	if r == nil {
		return ""
	}
	return r.Name
}

// validateRoute checks one route's fields on their own.
func validateRoute(r *Route) error {
	switch {
	case r == nil:
		return errors.New("nil route")
	case r.Name == "":
		return errors.New("name: want a non-empty route name")
	case r.Pool == nil:
		return errors.New("pool: want the route's upstream pool")
	}
	switch r.Mode {
	case ModeSplice:
		return validateSplice(r)
	case ModeBridge:
		return validateBridge(r)
	}
	return fmt.Errorf("mode %q: want %q or %q", r.Mode, ModeSplice, ModeBridge)
}

func validateSplice(r *Route) error {
	switch r.ProxyProtocol {
	case ProxyProtocolNone, ProxyProtocolV1, ProxyProtocolV2:
	default:
		return fmt.Errorf("proxy_protocol %q: want \"\", \"v1\" or \"v2\"", r.ProxyProtocol)
	}
	if r.Serve != nil || r.UpstreamTLS != nil || r.UpstreamTLSFunc != nil || r.Handler != nil || r.ClientAuth != nil {
		return errors.New("serve, upstream_tls, ClientAuth and Handler apply to bridge routes only")
	}
	return nil
}

func validateBridge(r *Route) error {
	if r.Serve == nil {
		return errors.New("serve: a bridge route needs the certificate it presents to clients")
	}
	if r.ProxyProtocol != "" {
		return errors.New("proxy_protocol applies to splice routes only")
	}
	if r.ClientAuth != nil && r.ClientAuth.CAs == nil {
		return errors.New("ClientAuth: CAs is required (the bundle client certificates must chain to)")
	}
	for _, p := range r.ClientAuth.names() {
		if err := names.CheckIdentityPattern(p); err != nil {
			return fmt.Errorf("ClientAuth names %q: %w", p, err)
		}
	}
	return nil
}

// Routes returns the table's routes in configuration order. The slice
// must not be modified.
func (t *Table) Routes() []*Route { return t.routes }

// Route returns the route called name, or nil.
func (t *Table) Route(name string) *Route {
	for _, r := range t.routes {
		if r.Name == name {
			return r
		}
	}
	return nil
}
