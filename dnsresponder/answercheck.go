package dnsresponder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pool "github.com/snigate/snigate/upstream" // Hysteresis: the rise/fall rule of upstream health
)

// Defaults of AnswerCheckConfig, the same as config's for dns.answer_check.
const (
	DefaultAnswerCheckInterval = 2 * time.Second
	DefaultAnswerCheckTimeout  = time.Second
	DefaultAnswerCheckFall     = 2
	DefaultAnswerCheckRise     = 2
)

// AnswerCheckConfig configures an AnswerCheck (dns.answer_check). It is a
// plain struct literal, filled by the gateway, or by the CoreDNS plugin
// from its directives.
type AnswerCheckConfig struct {
	// Answer are the addresses to check (dns.answer): every gateway of
	// the cluster. At least one.
	Answer []netip.Addr
	// Port is the TLS listener port on every address, 1..65535.
	Port int
	// ServerName is the SNI of the check's ClientHello: the
	// configuration's first routed name (a wildcard's "*" replaced with
	// CheckLabel, see CheckServerName). Required.
	ServerName string
	// Interval between the starts of two checks of an address. Zero:
	// DefaultAnswerCheckInterval.
	Interval time.Duration
	// Timeout of one check, TCP connection and handshake; at most
	// Interval. Zero: DefaultAnswerCheckTimeout.
	Timeout time.Duration
	// Fall is the consecutive failures before an address is left out of
	// the answers; Rise the consecutive successes before it is given
	// again. Zero: DefaultAnswerCheckFall, DefaultAnswerCheckRise.
	Fall, Rise int
	// DialContextFunc opens the check's TCP connections. Nil: a
	// net.Dialer.
	DialContextFunc func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives the changes of state (an address down, up again,
	// left out while draining). Nil: slog.Default().
	Logger *slog.Logger
	// Metrics publishes snigate_dns_answer_up{address}. Nil: nothing.
	Metrics *AnswerMetrics
}

// AnswerCheck checks every answer address and keeps the list routed names
// are answered with (Current): the addresses that are up, all of them when
// none is, without the ones LeaveOut named (a gateway draining its own).
// Policies built with NewCheckedPolicy follow it. Run checks; Adopt
// carries the state of a check a reload replaces. Safe for concurrent use.
type AnswerCheck struct {
	cfg   AnswerCheckConfig
	log   *slog.Logger
	probe func(ctx context.Context, addr netip.AddrPort) error // tests replace it

	mu      sync.Mutex
	hosts   []*answerHost       // in Answer order
	leftOut map[netip.Addr]bool // LeaveOut's addresses
	current atomic.Pointer[answerList]
}

// answerList is one published answer: the addresses, in Answer order. A
// new list is a new pointer, so a Policy rebuilds its records once per
// change.
type answerList struct{ addrs []netip.Addr }

// answerHost is one answer address and what the checks found.
type answerHost struct {
	addr      netip.Addr
	health    pool.Hysteresis // starts up, as upstreams do (HAProxy's default)
	lastCheck time.Time
	lastErr   string
}

// AnswerStatus is one answer address as `snigate ctl answers` shows it.
type AnswerStatus struct {
	Address   string    `json:"address"`
	Healthy   bool      `json:"healthy"`  // the checks find it up
	Answered  bool      `json:"answered"` // in the answers now
	LeftOut   bool      `json:"left_out"` // this gateway's own address while it drains
	LastCheck time.Time `json:"last_check,omitzero"`
	LastError string    `json:"last_error"`
}

// NewAnswerCheck validates cfg and returns its check, every address up
// until checks find otherwise. It opens nothing.
func NewAnswerCheck(cfg AnswerCheckConfig) (*AnswerCheck, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	c := &AnswerCheck{cfg: cfg, log: cfg.Logger, leftOut: map[netip.Addr]bool{}}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.probe = c.handshake
	for _, a := range cfg.Answer {
		c.hosts = append(c.hosts, &answerHost{addr: a.Unmap()})
	}
	c.mu.Lock()
	c.publishLocked()
	c.mu.Unlock()
	return c, nil
}

func (cfg *AnswerCheckConfig) fill() error {
	switch {
	case len(cfg.Answer) == 0:
		return errors.New("dns answer_check: no answer addresses to check")
	case cfg.Port < 1 || cfg.Port > 65535:
		return fmt.Errorf("dns answer_check port %d: want a port from 1 to 65535", cfg.Port)
	case cfg.ServerName == "":
		return errors.New("dns answer_check: no server name for the ClientHello (a route's first name)")
	case cfg.Interval < 0, cfg.Timeout < 0, cfg.Fall < 0, cfg.Rise < 0:
		return errors.New("dns answer_check: interval, timeout, fall and rise must not be negative")
	}
	for i, a := range cfg.Answer {
		if !a.IsValid() {
			return fmt.Errorf("dns answer_check answer[%d]: want an IP address, got the zero address", i)
		}
	}
	cfg.Interval = cmp.Or(cfg.Interval, DefaultAnswerCheckInterval)
	cfg.Timeout = cmp.Or(cfg.Timeout, min(DefaultAnswerCheckTimeout, cfg.Interval))
	cfg.Fall = cmp.Or(cfg.Fall, DefaultAnswerCheckFall)
	cfg.Rise = cmp.Or(cfg.Rise, DefaultAnswerCheckRise)
	if cfg.Timeout > cfg.Interval {
		return fmt.Errorf("dns answer_check timeout %v: want at most the interval (%v)", cfg.Timeout, cfg.Interval)
	}
	return nil
}

// Run checks every address each Interval until ctx is done, the first
// round at once, and returns nil when every check it started is done.
func (c *AnswerCheck) Run(ctx context.Context) error {
	c.publishMetrics()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := time.Now()
		c.CheckOnce(ctx)
		t.Reset(c.cfg.Interval - time.Since(start))
	}
}

// CheckOnce checks every address once, concurrently, and records the
// results; it returns when all are recorded.
func (c *AnswerCheck) CheckOnce(ctx context.Context) {
	c.mu.Lock()
	addrs := make([]netip.Addr, len(c.hosts))
	for i, h := range c.hosts {
		addrs[i] = h.addr
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Go(func() { c.checkAddr(ctx, a) })
	}
	wg.Wait()
}

// checkAddr runs one check of a and records it, unless ctx ended it.
func (c *AnswerCheck) checkAddr(ctx context.Context, a netip.Addr) {
	pctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	err := c.probe(pctx, netip.AddrPortFrom(a, uint16(c.cfg.Port)))
	if ctx.Err() != nil {
		return // stopping: not the address's fault
	}
	c.log.Debug("dns: answer check", "address", a.String(), "err", err)
	c.record(a, err, time.Now())
}

// record applies one check's result to a and publishes what changed.
func (c *AnswerCheck) record(a netip.Addr, err error, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.host(a)
	if h == nil {
		return // removed by Adopt meanwhile
	}
	h.lastCheck, h.lastErr = at, errString(err)
	changed, up := h.health.Observe(err == nil, c.cfg.Rise, c.cfg.Fall)
	if !changed {
		return
	}
	if up {
		c.log.Info("dns: answer address up again, answered", "address", a.String())
	} else {
		c.log.Info("dns: answer address down, left out of the answers", "address", a.String(),
			"port", c.cfg.Port, "err", h.lastErr)
	}
	c.cfg.Metrics.set(a, up)
	c.publishLocked()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (c *AnswerCheck) host(a netip.Addr) *answerHost {
	for _, h := range c.hosts {
		if h.addr == a {
			return h
		}
	}
	return nil
}

// publishLocked computes the answer list and publishes it when it
// changed: the addresses not left out (none: all of them), of those the
// ones up (none: all of those).
func (c *AnswerCheck) publishLocked() {
	var cand, up []netip.Addr
	for _, h := range c.hosts {
		if !c.leftOut[h.addr] {
			cand = append(cand, h.addr)
		}
	}
	if len(cand) == 0 { // a single gateway draining: still somewhere to go
		for _, h := range c.hosts {
			cand = append(cand, h.addr)
		}
	}
	for _, h := range c.hosts {
		if h.health.Up() && slices.Contains(cand, h.addr) {
			up = append(up, h.addr)
		}
	}
	if len(up) == 0 {
		up = cand
	}
	if cur := c.current.Load(); cur != nil && slices.Equal(cur.addrs, up) {
		return
	}
	c.current.Store(&answerList{addrs: up})
}

// Current returns the addresses routed names are answered with now. The
// caller must not change the slice.
func (c *AnswerCheck) Current() []netip.Addr { return c.current.Load().addrs }

// LeaveOut leaves addrs (those of them that are answer addresses) out of
// the answers from now on, whatever the checks find: a gateway that
// drains calls it with its own addresses, so that nodes stop being sent
// to it at once. When every answer address is left out, all are answered.
func (c *AnswerCheck) LeaveOut(addrs []netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range addrs {
		if h := c.host(a.Unmap()); h != nil && !c.leftOut[h.addr] {
			c.leftOut[h.addr] = true
			c.log.Info("dns: own answer address left out of the answers while draining", "address", h.addr.String())
		}
	}
	c.publishLocked()
}

// Status returns every answer address, in configuration order.
func (c *AnswerCheck) Status() []AnswerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.current.Load().addrs
	out := make([]AnswerStatus, len(c.hosts))
	for i, h := range c.hosts {
		out[i] = AnswerStatus{
			Address:   h.addr.String(),
			Healthy:   h.health.Up(),
			Answered:  slices.Contains(cur, h.addr),
			LeftOut:   c.leftOut[h.addr],
			LastCheck: h.lastCheck,
			LastError: h.lastErr,
		}
	}
	return out
}

// Adopt carries over, from old (the check a reload replaces, stopped
// first), the state of the addresses both have and the addresses left
// out, and deletes the metric series of the addresses old had and c does
// not. Call it before c runs.
func (c *AnswerCheck) Adopt(old *AnswerCheck) {
	if old == nil {
		return
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		if oh := old.host(h.addr); oh != nil {
			*h = *oh
		}
		if old.leftOut[h.addr] {
			c.leftOut[h.addr] = true
		}
	}
	for _, oh := range old.hosts {
		if c.host(oh.addr) == nil {
			c.cfg.Metrics.delete(oh.addr)
		}
	}
	c.publishLocked()
}

// DeleteSeries deletes the snigate_dns_answer_up series of every address:
// a reload that removes dns.answer_check calls it on the last check.
func (c *AnswerCheck) DeleteSeries() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		c.cfg.Metrics.delete(h.addr)
	}
}

// publishMetrics sets snigate_dns_answer_up for every address.
func (c *AnswerCheck) publishMetrics() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		c.cfg.Metrics.set(h.addr, h.health.Up())
	}
}
