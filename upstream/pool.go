package upstream

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/snigate/snigate/internal/ratelog"
	"log/slog"
	"net"
	"slices"
	"sync/atomic"
	"time"
)

// Defaults applied by New to zero fields of Config.Check; they are the
// defaults of routes[].health (docs/configuration.md).
const (
	DefaultInterval = 3 * time.Second
	DefaultTimeout  = 2 * time.Second
	DefaultFall     = 3
	DefaultRise     = 2
	DefaultPath     = "/v2/"
	// DefaultBalance is the selection policy of a zero Config.Balance.
	DefaultBalance = RoundRobin
)

// DefaultExpectStatus returns the statuses a CheckHTTP passes on when
// Check.ExpectStatus is empty: 200 and 401 (a registry answers GET /v2/
// with 401 when it wants a token). It returns a new slice on each call.
func DefaultExpectStatus() []int { return []int{200, 401} }

// ErrUnknownUpstream is returned by Pool.SetState for an address the pool
// does not have (the admin API answers 404).
var ErrUnknownUpstream = errors.New("unknown upstream")

// Check configures the active health check of every host of a pool.
type Check struct {
	Kind         CheckKind     // "": CheckTCP
	Path         string        // CheckHTTP: request path and query; "": DefaultPath
	ExpectStatus []int         // CheckHTTP: statuses that pass; empty: DefaultExpectStatus()
	Interval     time.Duration // between the starts of two checks of a host; 0: DefaultInterval
	Timeout      time.Duration // one check, dial to verdict, usually at most Interval; 0: DefaultTimeout
	Fall         int           // consecutive failures that mark a healthy host down; 0: DefaultFall
	Rise         int           // consecutive passes that mark a down host up; 0: DefaultRise
}

// Config describes the pool of one route. The zero value of each field is
// documented; Route and Addrs are required.
type Config struct {
	Route   string   // route name, used in logs, metrics and Status
	Addrs   []string // host:port of each upstream, in configuration order
	Balance Balance  // "": DefaultBalance (RoundRobin)
	Check   Check

	// TLSConfigFunc returns the client configuration real connections
	// use (ServerName, client certificate, RootCAs). The tls and http
	// checks handshake with a clone of it, so they present the same SNI
	// and client certificate as traffic does. A ServerName of "" means
	// the host part of the address. nil (splice routes): the checks
	// handshake with that ServerName and without verifying the server,
	// which shows only that the upstream speaks TLS.
	TLSConfigFunc func() *tls.Config

	// DialContext opens the TCP connection of every check; nil: a
	// net.Dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	Logger  *slog.Logger // nil: slog.Default()
	Metrics *Metrics     // nil: no metrics
}

// Pool holds the upstream hosts of one route, runs their health checks and
// orders them for each new connection. Create it with New, start its checks
// with Run, and ask Candidates for the hosts to try. Its methods are safe
// for concurrent use.
type Pool struct {
	cfg      Config
	log      *slog.Logger
	checker  checker
	hosts    []atomic.Pointer[Host] // fixed length, config order; Adopt swaps entries
	index    map[string]int         // addr -> position in hosts
	sessions []tls.ClientSessionCache
	robin    atomic.Uint64
	running  atomic.Bool
	// localLog rate-limits the Error line of local check failures
	// (localErrorLogEvery).
	localLog ratelog.Limiter
}

// New validates cfg, fills in defaults and returns a pool whose hosts all
// start healthy and ready. It opens nothing and starts nothing.
func New(cfg Config) (*Pool, error) {
	if err := withDefaults(&cfg); err != nil {
		return nil, fmt.Errorf("route %q: %w", cfg.Route, err)
	}
	p := &Pool{
		cfg:      cfg,
		log:      cfg.Logger,
		checker:  checker{check: cfg.Check, dial: cfg.DialContext, tlsConfig: cfg.TLSConfigFunc},
		hosts:    make([]atomic.Pointer[Host], len(cfg.Addrs)),
		index:    make(map[string]int, len(cfg.Addrs)),
		sessions: make([]tls.ClientSessionCache, len(cfg.Addrs)),
		localLog: ratelog.Limiter{Every: localErrorLogEvery},
	}
	for i, addr := range cfg.Addrs {
		p.hosts[i].Store(newHost(addr, p))
		p.index[addr] = i
		p.sessions[i] = tls.NewLRUClientSessionCache(1)
	}
	return p, nil
}

func withDefaults(cfg *Config) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DialContext == nil {
		cfg.DialContext = new(net.Dialer).DialContext
	}
	cfg.Addrs = slices.Clone(cfg.Addrs)
	if err := validateAddrs(cfg.Addrs); err != nil {
		return err
	}
	switch cfg.Balance {
	case "":
		cfg.Balance = DefaultBalance
	case RoundRobin, LeastConn:
	default:
		return fmt.Errorf("balance %q: want roundrobin or leastconn", cfg.Balance)
	}
	return checkDefaults(&cfg.Check)
}

func validateAddrs(addrs []string) error {
	if len(addrs) == 0 {
		return errors.New("no upstreams: want at least one host:port")
	}
	seen := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("upstream %q: want host:port: %w", a, err)
		}
		if seen[a] {
			return fmt.Errorf("upstream %q listed twice", a)
		}
		seen[a] = true
	}
	return nil
}

func checkDefaults(c *Check) error {
	switch c.Kind {
	case "":
		c.Kind = CheckTCP
	case CheckTCP, CheckTLS, CheckHTTP:
	default:
		return fmt.Errorf("health check %q: want tcp, tls or http", c.Kind)
	}
	if c.Path == "" {
		c.Path = DefaultPath
	} else if c.Path[0] != '/' {
		return fmt.Errorf("health path %q: want an absolute path such as \"/v2/\"", c.Path)
	}
	if len(c.ExpectStatus) == 0 {
		c.ExpectStatus = DefaultExpectStatus()
	}
	for _, s := range c.ExpectStatus {
		if s < 100 || s > 599 {
			return fmt.Errorf("health expect_status %d: want an HTTP status from 100 to 599", s)
		}
	}
	c.ExpectStatus = slices.Clone(c.ExpectStatus)
	return positiveDefaults(c)
}

func positiveDefaults(c *Check) error {
	if c.Interval < 0 || c.Timeout < 0 || c.Fall < 0 || c.Rise < 0 {
		return fmt.Errorf("health interval, timeout, fall and rise: want positive values, got %v, %v, %d, %d",
			c.Interval, c.Timeout, c.Fall, c.Rise)
	}
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.Fall = cmp.Or(c.Fall, DefaultFall)
	c.Rise = cmp.Or(c.Rise, DefaultRise)
	return nil
}

// Route returns the route name the pool serves.
func (p *Pool) Route() string { return p.cfg.Route }

// host returns the current host for addr, or nil.
func (p *Pool) host(addr string) *Host {
	i, ok := p.index[addr]
	if !ok {
		return nil
	}
	return p.hosts[i].Load()
}

// SetState sets the administrative state of the host at addr. Leaving
// StateMaint runs that host's check at once (when Run is running). The
// error wraps ErrInvalidState or ErrUnknownUpstream.
func (p *Pool) SetState(addr string, s State) error {
	if _, err := ParseState(string(s)); err != nil {
		return err
	}
	h := p.host(addr)
	if h == nil {
		return fmt.Errorf("%w: route %q has no upstream %q", ErrUnknownUpstream, p.Route(), addr)
	}
	old := h.setState(s)
	if old != s {
		p.log.Info("upstream state changed", "route", p.Route(), "upstream", addr,
			"from", string(old), "to", string(s))
		p.cfg.Metrics.setState(p.Route(), addr, s)
	}
	return nil
}

// Adopt takes over, from the pool old that p replaces on reload, every host
// whose address both have: the *Host itself moves, with its health, rise
// and fall runs, administrative state, last check and error, and the count
// of active connections that still-running connections will release. From
// then on only p checks it. old's hosts that p does not have are retired:
// old stops checking them and, when both pools serve the same route, their
// metric series are deleted. Adopt may be called before or after p.Run
// starts; old's Run should be cancelled afterwards. Adopt(nil) does
// nothing.
func (p *Pool) Adopt(old *Pool) {
	if old == nil || old == p {
		return
	}
	for i := range p.hosts {
		h := old.host(p.hosts[i].Load().addr)
		if h == nil {
			continue
		}
		h.owner.Store(p)
		p.hosts[i].Store(h)
		p.publish(h)
	}
	for i := range old.hosts {
		h := old.hosts[i].Load()
		if p.host(h.addr) != nil {
			continue
		}
		h.owner.CompareAndSwap(old, nil)
		if old.Route() == p.Route() {
			old.cfg.Metrics.DeleteUpstream(old.Route(), h.addr)
		}
	}
}
