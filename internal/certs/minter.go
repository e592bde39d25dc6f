package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of MinterConfig.
const (
	DefaultLeafValidity = 7 * 24 * time.Hour // a minted leaf's lifetime
	DefaultMaxLeaves    = 4096               // cached leaves; beyond, the least recently served is dropped
)

// MinterConfig configures a Minter.
type MinterConfig struct {
	CACertFile string // PEM CA certificate (serve.ca_cert); required
	CAKeyFile  string // its PEM private key (serve.ca_key); required
	Route      string // label for metrics and logs
	// Names, if set, are the only names minted for: exact names or one-label
	// wildcards ("*.registry.example.com"), normally the route's sni list,
	// so that a default_route cannot make the CA sign for arbitrary names.
	// Empty: any name the CA's constraints permit.
	Names []string

	Logger  *slog.Logger // nil: slog.Default()
	Metrics *Metrics     // nil: no metrics

	// Validity is a minted leaf's lifetime (never beyond the CA's).
	// Zero: DefaultLeafValidity.
	Validity time.Duration
	// RenewBefore is how long before a leaf expires it is replaced. Zero:
	// Validity/3. It must be shorter than Validity.
	RenewBefore time.Duration
	// MaxLeaves bounds the cache of minted leaves; a new name beyond it
	// drops the least recently served leaf. Zero: DefaultMaxLeaves.
	MaxLeaves int
	// MintRate is how many new names a second one client address (the
	// handshake's ClientHelloInfo.Conn.RemoteAddr) may have minted, after
	// a burst of MintBurst; names already cached are not limited, and
	// neither is a ClientHelloInfo without a Conn. Over it, GetCertificate
	// and CheckName fail with ErrMintRateLimited. Zero: DefaultMintRate;
	// negative: no limit.
	MintRate float64
	// MintBurst is the number of new names a client may have minted at
	// once. Zero: DefaultMintBurst.
	MintBurst int
	// PollInterval is passed to the CA files' KeyPair. Zero:
	// DefaultPollInterval.
	PollInterval time.Duration
	// Now is the clock. Nil: time.Now.
	Now func() time.Time

	// OnMintFunc, if set, is called at the start of every mint with the
	// name, on the goroutine that mints: blocking in it delays that name
	// only. For tests and tracing.
	OnMintFunc func(name string)
	// OnCAChangeFunc, if set, is called after a changed CA was put in use
	// and the leaf cache dropped.
	OnCAChangeFunc func()
}

// Minter serves, for each SNI name, a leaf certificate it signs with a CA
// (serve.ca_cert/ca_key): minted on first use, cached, renewed in the
// background well before it expires. Concurrent first handshakes for one
// name mint once; a mint never blocks handshakes for other names. The CA
// files are watched like a KeyPair's; a changed CA drops the cache.
type Minter struct {
	cfg    MinterConfig
	log    *slog.Logger
	caPair *KeyPair
	ca     atomic.Pointer[issuer]

	rate     mintLimiter
	mu       sync.Mutex
	leaves   *leafCache           // by canonical name
	inflight map[string]*mintCall // by canonical name
	stopped  bool                 // Run has ended: no more background mints
	wg       sync.WaitGroup       // background renewals

	joinHook func(name string) // tests: a handshake waits for another's mint
}

// leaf is a cached minted certificate.
type leaf struct {
	name    string // canonical
	cert    *tls.Certificate
	iss     *issuer
	renewAt time.Time
	used    atomic.Bool // served since minted: the sweep renews only these
}

// mintCall is one mint in flight; done is closed when cert/err are set.
type mintCall struct {
	done chan struct{}
	cert *tls.Certificate
	err  error
}

// NewMinter loads and checks the CA (a CA certificate, able to sign, not
// expired). Call Run to watch it and to renew leaves in the background.
func NewMinter(cfg MinterConfig) (*Minter, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	m := &Minter{cfg: cfg, log: cfg.Logger, leaves: newLeafCache(cfg.MaxLeaves), inflight: map[string]*mintCall{}}
	m.rate.rate, m.rate.burst = cfg.MintRate, cfg.MintBurst
	if m.log == nil {
		m.log = slog.Default()
	}
	kp, err := NewKeyPair(KeyPairConfig{
		CertFile: cfg.CACertFile, KeyFile: cfg.CAKeyFile, Route: cfg.Route, Role: RoleServeCA,
		Logger: cfg.Logger, Metrics: cfg.Metrics, PollInterval: cfg.PollInterval,
		OnReloadFunc: m.caReloaded,
	})
	if err != nil {
		return nil, err
	}
	iss, err := newIssuer(kp.certificate(), cfg.CACertFile, cfg.Now())
	if err != nil {
		return nil, fmt.Errorf("certs: route %q serve.ca_cert: %w", cfg.Route, err)
	}
	m.caPair = kp
	m.ca.Store(iss)
	return m, nil
}

func (c *MinterConfig) setDefaults() error {
	if c.CACertFile == "" || c.CAKeyFile == "" {
		return fmt.Errorf("certs: minter for route %q: want both serve.ca_cert and serve.ca_key, got %q and %q",
			c.Route, c.CACertFile, c.CAKeyFile)
	}
	if c.Validity <= 0 {
		c.Validity = DefaultLeafValidity
	}
	if c.RenewBefore <= 0 {
		c.RenewBefore = c.Validity / 3
	}
	if c.RenewBefore >= c.Validity {
		return fmt.Errorf("certs: minter for route %q: renew-before %s must be shorter than validity %s",
			c.Route, c.RenewBefore, c.Validity)
	}
	if c.MaxLeaves <= 0 {
		c.MaxLeaves = DefaultMaxLeaves
	}
	if c.MintRate == 0 {
		c.MintRate = DefaultMintRate
	}
	if c.MintBurst <= 0 {
		c.MintBurst = DefaultMintBurst
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// GetCertificate returns the leaf for hello.ServerName, minting it on first
// use (the shape of tls.Config.GetCertificate). It fails for a ClientHello
// without SNI (ErrNoServerName), a name that is not a valid host name, a
// name outside the CA's name constraints (errors.Is ErrNameNotPermitted),
// and a new name for a client over MintRate (errors.Is ErrMintRateLimited).
func (m *Minter) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	m.caPair.observe()
	name, iss, err := m.admit(hello)
	if err != nil {
		return nil, err
	}
	cert, call, leader, err := m.lookup(name, iss, clientAddr(hello.Conn))
	if err != nil {
		m.cfg.Metrics.minted(m.cfg.Route, "rate_limited")
		return nil, err
	}
	if cert != nil {
		return cert, nil
	}
	if leader {
		m.mint(name, iss, call, false)
	} else if m.joinHook != nil {
		m.joinHook(name)
	}
	return m.await(helloContext(hello), name, call)
}

// CheckName reports, without minting, whether GetCertificate would serve
// hello now: the same errors for the name, and ErrMintRateLimited for a
// new name from a client out of budget (nothing is spent). The bridge
// asks it before it dials an upstream, so that a refused name costs no
// upstream handshake.
func (m *Minter) CheckName(hello *tls.ClientHelloInfo) error {
	name, iss, err := m.admit(hello)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cachedLocked(name, iss, m.cfg.Now()) != nil || m.inflight[name] != nil {
		return nil
	}
	if err := m.rate.allow(clientAddr(hello.Conn), m.cfg.Now(), false); err != nil {
		m.cfg.Metrics.minted(m.cfg.Route, "rate_limited")
		return err
	}
	return nil
}

// admit checks hello's name against the route and the CA in use.
func (m *Minter) admit(hello *tls.ClientHelloInfo) (string, *issuer, error) {
	if hello == nil || hello.ServerName == "" {
		m.cfg.Metrics.minted(m.cfg.Route, "refused")
		return "", nil, ErrNoServerName
	}
	name := canonicalName(hello.ServerName)
	iss := m.ca.Load()
	if err := m.check(name, iss); err != nil {
		m.cfg.Metrics.minted(m.cfg.Route, "refused")
		return "", nil, err
	}
	return name, iss, nil
}

func (m *Minter) check(name string, iss *issuer) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("certs: cannot mint a certificate for server name: %w", err)
	}
	if len(m.cfg.Names) > 0 && !matchesAny(name, m.cfg.Names) {
		return fmt.Errorf("certs: route %q mints only for [%s]; not for %s",
			m.cfg.Route, strings.Join(m.cfg.Names, " "), name)
	}
	return iss.permits(name)
}

// matchesAny reports whether name equals a pattern or matches a one-label
// wildcard "*.base".
func matchesAny(name string, patterns []string) bool {
	for _, p := range patterns {
		p = canonicalName(p)
		if base, ok := strings.CutPrefix(p, "*."); ok && oneLabelBelow(name, base) || name == p {
			return true
		}
	}
	return false
}

func helloContext(hello *tls.ClientHelloInfo) context.Context {
	if ctx := hello.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// lookup returns the cached leaf for name if it is still valid (starting a
// background renewal when it is due), else the mint to wait for, creating
// it (leader) if none is in flight and client's budget allows a new name.
func (m *Minter) lookup(name string, iss *issuer, client netip.Addr) (cert *tls.Certificate, call *mintCall, leader bool, err error) {
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.cachedLocked(name, iss, now); l != nil {
		m.leaves.get(name)
		l.used.Store(true)
		if !now.Before(l.renewAt) {
			m.renewLocked(name, iss)
		}
		return l.cert, nil, false, nil
	}
	if call = m.inflight[name]; call != nil {
		return nil, call, false, nil
	}
	if err := m.rate.allow(client, now, true); err != nil {
		return nil, nil, false, err
	}
	call = &mintCall{done: make(chan struct{})}
	m.inflight[name] = call
	return nil, call, true, nil
}

// cachedLocked returns the cached leaf for name if it is of iss and not
// expired. m.mu is held.
func (m *Minter) cachedLocked(name string, iss *issuer, now time.Time) *leaf {
	if l := m.leaves.peek(name); l != nil && l.iss == iss && now.Before(l.cert.Leaf.NotAfter) {
		return l
	}
	return nil
}

// renewLocked starts a background mint for name unless one is in flight or
// Run has ended. m.mu is held.
func (m *Minter) renewLocked(name string, iss *issuer) {
	if m.inflight[name] != nil || m.stopped {
		return
	}
	call := &mintCall{done: make(chan struct{})}
	m.inflight[name] = call
	m.wg.Go(func() { m.mint(name, iss, call, true) })
}

func (m *Minter) await(ctx context.Context, name string, call *mintCall) (*tls.Certificate, error) {
	select {
	case <-call.done:
		return call.cert, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("certs: waiting for the certificate of %s: %w", name, ctx.Err())
	}
}

// mint signs a leaf for name, caches it if iss is still the CA in use, and
// releases everyone waiting on call.
func (m *Minter) mint(name string, iss *issuer, call *mintCall, renewal bool) {
	defer close(call.done)
	if m.cfg.OnMintFunc != nil {
		m.cfg.OnMintFunc(name)
	}
	now := m.cfg.Now()
	call.cert, call.err = iss.issue(name, now, m.cfg.Validity)
	m.store(name, iss, call, now)
	m.report(name, call, renewal)
}

// store ends call's flight and caches its leaf.
func (m *Minter) store(name string, iss *issuer, call *mintCall, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inflight[name] == call {
		delete(m.inflight, name)
	}
	if call.err != nil || m.ca.Load() != iss {
		return
	}
	m.leaves.put(&leaf{name: name, cert: call.cert, iss: iss, renewAt: m.renewAt(call.cert, now)})
	m.updateExpiryLocked()
}

// renewAt is when a leaf minted at now is replaced: RenewBefore ahead of
// its expiry, or a third of its lifetime ahead if the CA's expiry cut the
// lifetime short.
func (m *Minter) renewAt(c *tls.Certificate, now time.Time) time.Time {
	lifetime := c.Leaf.NotAfter.Sub(now)
	return c.Leaf.NotAfter.Add(-min(m.cfg.RenewBefore, lifetime/3))
}

// updateExpiryLocked sets the serve expiry metric to the earliest NotAfter
// among cached leaves.
func (m *Minter) updateExpiryLocked() {
	var first time.Time
	m.leaves.each(func(l *leaf) {
		if na := l.cert.Leaf.NotAfter; first.IsZero() || na.Before(first) {
			first = na
		}
	})
	if first.IsZero() {
		m.cfg.Metrics.deleteExpiry(m.cfg.Route, RoleServe)
		return
	}
	m.cfg.Metrics.setExpiry(m.cfg.Route, RoleServe, first)
}

// report logs and counts a finished mint. A failed first mint is returned
// to the handshakes waiting for it (which log it); a failed renewal has no
// one to return to, so it is logged here.
func (m *Minter) report(name string, call *mintCall, renewal bool) {
	if call.err != nil {
		m.cfg.Metrics.minted(m.cfg.Route, "error")
		if renewal {
			m.log.Error("certificate renewal failed; serving the current one until it expires",
				"route", m.cfg.Route, "sni", name, "err", call.err)
		}
		return
	}
	m.cfg.Metrics.minted(m.cfg.Route, "ok")
	msg := "certificate minted"
	if renewal {
		msg = "certificate renewed"
	}
	leaf := call.cert.Leaf
	m.log.Info(msg, "route", m.cfg.Route, "sni", name, "serial", serialHex(leaf), "not_after", leaf.NotAfter.UTC())
}
