package upstream

import "fmt"

// ReportDial tells the pool how a connection attempt to h made for traffic
// went (passive health, as HAProxy's "observe layer4"): err nil for a
// connection that is ready for its tunnel, else why the attempt failed
// (TCP, or the TLS handshake and client-certificate verdict of a bridge
// route). Check.Fall consecutive failures mark a healthy host down at
// once, without waiting for the active checks; it comes back only when
// they pass Check.Rise times. While a host of a pool whose connections
// use TLS (Config.TLSConfigFunc) is down that way, its tcp check is run
// as a tls check, so that a server that accepts TCP but fails every
// handshake (a black hole, an expired or untrusted certificate) is not
// brought back by a check that only connects.
//
// The caller reports only failures that are the upstream's: not those
// caused by the client's own offer (the name it asked for, its ALPN list)
// nor a cancellation of the attempt from outside. Failures to open a
// socket for lack of descriptors or memory (this process's fault) are
// ignored here. A host retired by a reload is ignored; one adopted by a
// newer pool is judged by that pool's settings. Safe for concurrent use;
// a success costs one atomic load.
func (p *Pool) ReportDial(h *Host, err error) {
	if err == nil {
		if h.dialFailures.Load() != 0 {
			h.dialFailures.Store(0)
		}
		return
	}
	if localError(err) {
		return
	}
	if owner := h.owner.Load(); owner != nil {
		owner.dialFailed(h, err)
	}
}

// dialFailed counts one failed traffic dial of h and marks it down at
// Check.Fall in a row.
func (p *Pool) dialFailed(h *Host, err error) {
	n := h.dialFailures.Add(1)
	if int(n) < p.cfg.Check.Fall {
		return
	}
	h.dialFailures.Store(0)
	if !h.markDownPassive(fmt.Errorf("%d consecutive failed connections: %w", n, err)) {
		return
	}
	p.log.Info("upstream health changed", "route", p.Route(), "upstream", h.addr,
		"from", healthWord(true), "to", healthWord(false), "check", "passive", "err", err.Error())
	p.cfg.Metrics.setUp(p.Route(), h.addr, false)
}

// markDownPassive marks a healthy h down on the evidence of traffic; it
// reports whether h was healthy.
func (h *Host) markDownPassive(err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.health.Up() {
		return false
	}
	h.health.Set(false)
	h.passiveDown = true
	h.lastErr = "passive: " + err.Error()
	h.refreshLocked()
	return true
}

// checkKind is the check to run on h now: Check.Kind, or tls instead of
// tcp while h is down on the evidence of traffic to a pool that uses TLS.
func (p *Pool) checkKind(h *Host) CheckKind {
	kind := p.cfg.Check.Kind
	if kind != CheckTCP || p.cfg.TLSConfigFunc == nil {
		return kind
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passiveDown {
		return CheckTLS
	}
	return kind
}
