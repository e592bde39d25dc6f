package httpbridge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/snigate/snigate/oci"
	"github.com/snigate/snigate/upstream"
)

// Defaults applied by New to zero fields of Config.
const (
	DefaultConnectTimeout    = 5 * time.Second
	DefaultReadHeaderTimeout = 30 * time.Second
	// DefaultResponseHeaderTimeout bounds the wait for an upstream's
	// response headers once the request is sent.
	DefaultResponseHeaderTimeout = time.Minute
	DefaultRedirects             = RedirectsFollow
	// DefaultMaxIdleConnsPerHost is how many idle upstream connections
	// the route keeps per upstream (HTTP/1.1; an HTTP/2 connection
	// carries many requests at once): as many as one node HTTP/2
	// connection may have requests in flight
	// (DefaultMaxConcurrentStreams), so that a burst of pulls finds its
	// connections again instead of dialling.
	DefaultMaxIdleConnsPerHost = DefaultMaxConcurrentStreams
	// DefaultUpstreamIdleTimeout closes upstream connections idle this
	// long.
	DefaultUpstreamIdleTimeout = 90 * time.Second
	// DefaultMaxHeaderBytes bounds a node request's request line and
	// headers (HTTP/1.1; net/http adds 4 KiB of slack) and the
	// uncompressed header list of an HTTP/2 request (SETTINGS_MAX_HEADER_LIST_SIZE):
	// above it the node gets 431.
	// Registry requests carry a path under 1 KiB and a bearer token of a
	// few KiB.
	DefaultMaxHeaderBytes = 64 << 10
	// MaxRedirects is how many redirects to other hosts are followed
	// for one request.
	MaxRedirects = 5
)

// Values of Config.UpstreamProtocol (routes[].http.upstream_protocol):
// the protocol of the route's requests to its registry.
const (
	// UpstreamAuto is the protocol measured best, now UpstreamHTTP1 for
	// every request: over HTTP/2 the registry spent 1.5-2.8x the CPU per
	// request, manifests and blobs alike, and the gateway no less
	// (BenchmarkUpstreamProtocol, bench/RESULTS.md "Lever 1").
	UpstreamAuto = "auto"
	// UpstreamHTTP1 sends every request over a pool of keep-alive
	// HTTP/1.1 connections (ALPN http/1.1 only).
	UpstreamHTTP1 = "http1"
	// UpstreamH2 sends every request as HTTP/2 where the registry offers
	// it, over keep-alive HTTP/1.1 otherwise.
	UpstreamH2 = "h2"
	// DefaultUpstreamProtocol is the protocol when Config leaves it "".
	DefaultUpstreamProtocol = UpstreamAuto
)

// Values of Config.Redirects (routes[].http.redirects).
const (
	RedirectsFollow = "follow"
	RedirectsPass   = "pass"
)

// Upstreams is what the bridge needs from the route's pool: the healthy
// hosts in the order to try them. *upstream.Pool implements it, and
// dialReporter too.
type Upstreams interface {
	Candidates() []*upstream.Host
}

// dialReporter is the pool's passive health: how each upstream
// connection attempt went (*upstream.Pool.ReportDial).
type dialReporter interface {
	ReportDial(h *upstream.Host, err error)
}

// Config describes one http route's bridge. Route and Upstreams are
// required; the zero value of every other field is documented.
type Config struct {
	Route     string
	Upstreams Upstreams
	// UpstreamTLS returns a fresh client configuration for each upstream
	// dial (client certificate, RootCAs, ServerName, ClientSessionCache);
	// the bridge sets NextProtos (h2 and http/1.1 on the HTTP/2 leg,
	// http/1.1 alone on the HTTP/1.1 pool), TLS 1.2 at least,
	// and ServerName to the upstream's host when "". nil: system roots,
	// no client certificate.
	UpstreamTLS func() *tls.Config
	// UpstreamIdentity names the client certificate and trust bundle
	// UpstreamTLS gives now (certs.ClientTLS.Identity). When its value
	// changes, requests stop using the pooled connections made under the
	// previous one: a rotated edge certificate (or CA bundle) reaches the
	// registry with the next request, as on a byte-bridged route. Idle
	// old connections are closed at once, busy ones finish their
	// requests. nil: the pool is kept until Close.
	UpstreamIdentity func() string
	// DialContext opens TCP connections to upstreams and to the hosts
	// redirects lead to. nil: a net.Dialer (for redirects, one whose
	// Control hook refuses the addresses RedirectAllow does not allow,
	// before connecting; with a DialContext of the caller's, the peer is
	// checked once connected).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// ConnectTimeout bounds each upstream attempt, TCP plus TLS
	// handshake. 0: DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ReadHeaderTimeout bounds the reading of a node request's headers
	// (HTTP/1.1). 0: DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for an upstream's response
	// headers; a GET or HEAD that runs out of it is tried on the next
	// upstream. 0: DefaultResponseHeaderTimeout.
	ResponseHeaderTimeout time.Duration
	// UpstreamProtocol is UpstreamAuto, UpstreamHTTP1 or UpstreamH2;
	// "": DefaultUpstreamProtocol.
	UpstreamProtocol string

	// Forwarded sets X-Forwarded-For, X-Real-IP, X-Forwarded-Proto and
	// Forwarded from the node's address; the node's own are dropped
	// either way.
	Forwarded bool
	// Methods the nodes may use; nil: DefaultMethods() (GET, HEAD).
	Methods []string
	// Repositories is the allow-list ("team/app", "team/*", "team/**");
	// empty: every repository.
	Repositories []string
	// Redirects is RedirectsFollow or RedirectsPass; "": DefaultRedirects.
	Redirects string
	// RedirectRoots are the roots trusted for the hosts redirects lead
	// to (system roots plus upstream_tls.ca). nil: system roots.
	RedirectRoots *x509.CertPool
	// RedirectAllow are the addresses a followed redirect may connect to
	// although they are loopback, link-local, unspecified, multicast or
	// one of the gateway's own interface addresses, all refused
	// otherwise (private ranges such as 10.0.0.0/8 are always allowed).
	// nil: none.
	RedirectAllow []netip.Prefix

	// Chain builds the links between the policy and the proxy (the
	// cache); nil: none, and the audit's cache is "".
	Chain Chain
	// AuthFunc puts the gateway's registry credentials on the upstream
	// leg (routes[].http.auth; the gateway gives a regauth.Transport):
	// see AuthFunc. nil: the node's Authorization passes to the registry.
	AuthFunc AuthFunc
	Audit    *AuditLog // nil: no audit records; the caller closes it
	Metrics  *Metrics  // nil: no metrics
	Log      *slog.Logger
}

// withDefaults validates cfg and fills in its defaults.
func withDefaults(cfg Config) (Config, oci.RepoAllowList, error) {
	var errs []error
	if cfg.Route == "" {
		errs = append(errs, errors.New("route: want the route's name"))
	}
	if cfg.Upstreams == nil {
		errs = append(errs, errors.New("upstreams: want the route's upstream pool"))
	}
	if cfg.Methods == nil {
		cfg.Methods = oci.DefaultMethods()
	}
	cfg.Methods = slices.Clone(cfg.Methods)
	if err := oci.CheckMethods(cfg.Methods); err != nil {
		errs = append(errs, err)
	}
	repos, err := oci.NewRepoAllowList(cfg.Repositories)
	if err != nil {
		errs = append(errs, err)
	}
	switch cfg.Redirects {
	case "":
		cfg.Redirects = DefaultRedirects
	case RedirectsFollow, RedirectsPass:
	default:
		errs = append(errs, fmt.Errorf("redirects %q: want follow or pass", cfg.Redirects))
	}
	switch cfg.UpstreamProtocol {
	case "":
		cfg.UpstreamProtocol = DefaultUpstreamProtocol
	case UpstreamAuto, UpstreamHTTP1, UpstreamH2:
	default:
		errs = append(errs, fmt.Errorf("upstream_protocol %q: want auto, http1 or h2", cfg.UpstreamProtocol))
	}
	if cfg.ConnectTimeout < 0 || cfg.ReadHeaderTimeout < 0 || cfg.ResponseHeaderTimeout < 0 {
		errs = append(errs, errors.New("timeouts: want durations of 0 (the default) or more"))
	}
	cfg.ConnectTimeout = orDefault(cfg.ConnectTimeout, DefaultConnectTimeout)
	cfg.ReadHeaderTimeout = orDefault(cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	cfg.ResponseHeaderTimeout = orDefault(cfg.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, nil, fmt.Errorf("route %q: http: %w", cfg.Route, err)
	}
	return cfg, repos, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
