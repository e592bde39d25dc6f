package certs

import (
	"context"
	"crypto/tls"
	"sync"
	"time"
)

// Run watches the CA files (as a KeyPair does) and renews cached leaves
// entering their renewal window, until ctx is done; then it waits for
// renewals in flight and returns nil. Without Run, leaves are still minted
// and renewed on use, but a changed CA is noticed only by handshakes. Call
// it once.
func (m *Minter) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { m.caPair.Run(ctx) })
	m.sweepLoop(ctx)
	wg.Wait()
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// sweepInterval is how often Run looks for leaves due for renewal: often
// enough to act well inside RenewBefore.
func (m *Minter) sweepInterval() time.Duration {
	return min(time.Minute, max(m.cfg.RenewBefore/4, time.Second))
}

func (m *Minter) sweepLoop(ctx context.Context) {
	tick := time.NewTicker(m.sweepInterval())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			m.sweep()
		}
	}
}

// sweep renews, in the background, the leaves due for renewal that were
// served since they were minted, and drops expired leaves and due leaves no
// one used (they are minted again on their next use).
func (m *Minter) sweep() {
	now := m.cfg.Now()
	iss := m.ca.Load()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leaves.each(func(l *leaf) {
		switch {
		case !now.Before(l.cert.Leaf.NotAfter), !now.Before(l.renewAt) && !l.used.Load():
			m.leaves.remove(l.name)
		case !now.Before(l.renewAt):
			m.renewLocked(l.name, iss)
		}
	})
	m.updateExpiryLocked()
}

// caReloaded is the CA KeyPair's hook: a CA that can sign replaces the one
// in use and drops every cached leaf (they chain to the old CA); one that
// cannot is reported and the previous CA stays.
func (m *Minter) caReloaded(c *tls.Certificate, err error) {
	if err != nil {
		return // the KeyPair has logged and counted it
	}
	iss, err := newIssuer(c, m.cfg.CACertFile, m.cfg.Now())
	if err != nil {
		m.cfg.Metrics.reloadFailed(m.cfg.Route, RoleServeCA)
		m.log.Warn("CA files changed but cannot be used; minting with the previous CA",
			"route", m.cfg.Route, "err", err)
		return
	}
	m.ca.Store(iss)
	m.mu.Lock()
	dropped := m.leaves.len()
	m.leaves = newLeafCache(m.cfg.MaxLeaves)
	m.inflight = map[string]*mintCall{}
	m.updateExpiryLocked()
	m.mu.Unlock()
	m.log.Info("CA changed; cached leaf certificates dropped", "route", m.cfg.Route,
		"subject", c.Leaf.Subject.String(), "serial", serialHex(c.Leaf), "dropped", dropped)
	if m.cfg.OnCAChangeFunc != nil {
		m.cfg.OnCAChangeFunc()
	}
}
