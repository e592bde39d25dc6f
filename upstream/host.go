package upstream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Host is one upstream address of a Pool: its health, its administrative
// state and its count of active connections. Hosts are created by New and
// may move to a newer Pool on reload (Pool.Adopt), so a *Host outlives the
// Pool that made it while connections hold it. Methods are safe for
// concurrent use. A Host must not be copied.
type Host struct {
	addr   string
	active atomic.Int64
	// dialFailures counts consecutive failed traffic dials (ReportDial).
	dialFailures atomic.Int32
	usable       atomic.Bool          // healthy && ready: read on every Candidates call
	owner        atomic.Pointer[Pool] // the pool whose health checks update this host; nil: retired
	wake         chan struct{}        // signalled when the host leaves maint: check at once
	check        chan struct{}        // holds a token while a health check of the host runs

	mu sync.Mutex
	hostState
}

// hostState is the part of a Host guarded by Host.mu.
type hostState struct {
	health    Hysteresis // rise/fall applied to the checks
	state     State
	lastCheck time.Time
	lastErr   string
	// passiveDown: marked down by ReportDial, not up since.
	passiveDown bool
}

// newHost returns a host that starts healthy and ready, as HAProxy's
// servers do: traffic flows at once and the first checks confirm it.
func newHost(addr string, owner *Pool) *Host {
	h := &Host{
		addr:      addr,
		wake:      make(chan struct{}, 1),
		check:     make(chan struct{}, 1),
		hostState: hostState{state: StateReady},
	}
	h.usable.Store(true)
	h.owner.Store(owner)
	return h
}

// lockCheck waits until no health check of h is in flight and claims the
// turn; it reports false, claiming nothing, when ctx ends first. The lock
// moves with the host from pool to pool.
func (h *Host) lockCheck(ctx context.Context) bool {
	select {
	case h.check <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// unlockCheck ends the turn claimed by lockCheck.
func (h *Host) unlockCheck() { <-h.check }

// Addr returns the host:port this host dials.
func (h *Host) Addr() string { return h.addr }

// Acquire counts one active connection to h and returns the func that
// uncounts it. Call release when the connection ends; calling it more than
// once has no further effect.
func (h *Host) Acquire() (release func()) {
	h.active.Add(1)
	return h.releaser()
}

// releaser returns the func that uncounts one active connection to h,
// once.
func (h *Host) releaser() (release func()) {
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			h.active.Add(-1)
		}
	}
}

// Active returns the number of acquired, unreleased connections.
func (h *Host) Active() int64 { return h.active.Load() }

// Healthy reports the result of the health checks (rise/fall applied).
func (h *Host) Healthy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.health.Up()
}

// State returns the administrative state.
func (h *Host) State() State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// snapshot returns a consistent copy of the guarded state.
func (h *Host) snapshot() hostState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hostState
}

// record applies one check result with rise/fall counting (Hysteresis)
// and reports whether health changed, and the health after it.
func (h *Host) record(err error, at time.Time, rise, fall int) (changed, healthy bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastCheck, h.lastErr = at, errString(err)
	changed, healthy = h.health.Observe(err == nil, rise, fall)
	if changed {
		h.passiveDown = h.passiveDown && !healthy
		h.refreshLocked()
	}
	return changed, healthy
}

// setState sets the administrative state and returns the previous one.
func (h *Host) setState(s State) State {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.state
	h.state = s
	h.refreshLocked()
	if old == StateMaint && s != StateMaint {
		select {
		case h.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	return old
}

func (h *Host) refreshLocked() {
	h.usable.Store(h.health.Up() && h.state == StateReady)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
