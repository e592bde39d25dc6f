package upstream

import (
	"errors"
	"fmt"
	"time"

	"github.com/snigate/snigate/oci"
)

// ErrNoHealthy: the route's pool has no candidate to try (every upstream
// is down, draining or in maintenance). Attempts.Err wraps it; sni and
// the HTTP bridge (503) branch on it. It is oci.ErrNoUpstream, the same
// value, so that the HTTP side's vocabulary, which imports nothing of
// snigate's, maps it without importing the pool.
var ErrNoHealthy = oci.ErrNoUpstream

// MinAttemptTimeout is the least time an attempt on one candidate gets
// when several remain (see Attempts.Next).
const MinAttemptTimeout = 500 * time.Millisecond

// Reporter learns how each attempt went (passive health); *Pool is one
// (ReportDial).
type Reporter interface {
	ReportDial(h *Host, err error)
}

// Attempts is the walk of one connection over its candidates, in order,
// the one policy of every caller (sni's goroutine path and event loop,
// the HTTP bridge): each attempt's share of the time left, the active
// count of the host being tried, passive health, and the error text when
// none succeeded. It works step by step and never blocks, so an event
// loop can drive it from its state machine: Next gives the host and the
// attempt's deadline, the caller dials, then reports the outcome with
// Succeeded, Failed or Excused, and calls Next again after a failure.
//
// It is a value: an event loop embeds it in its connection, and no
// attempt allocates (a failure allocates its error text). The zero value
// has no candidates. Not safe for concurrent use.
type Attempts struct {
	hosts    []*Host
	next     int       // index of the candidate Next returns next
	cur      *Host     // the candidate of the attempt in progress
	held     *Host     // the host whose active count the walk holds
	deadline time.Time // of the whole walk; zero: none
	budget   time.Duration
	report   Reporter // nil: no passive health
	errs     []error
}

// NewAttempts starts the walk over hosts (a Pool's Candidates) at start,
// all attempts within budget (timeouts.connect; 0: no deadline of the
// walk, each attempt bounds itself), reporting outcomes to report (nil:
// none).
func NewAttempts(hosts []*Host, start time.Time, budget time.Duration, report Reporter) Attempts {
	a := Attempts{hosts: hosts, budget: budget, report: report}
	if budget > 0 {
		a.deadline = start.Add(budget)
	}
	return a
}

// Next releases the active count of the previous attempt, if still held,
// and returns the next candidate, counted in its active connections, with
// the deadline of its attempt: an even share of the time left among the
// candidates left, at least MinAttemptTimeout, never past the walk's
// deadline (zero when the walk has none). So an upstream that accepts TCP
// and never answers (a black hole) uses its share, not the whole budget,
// and the next candidate is still tried. The first candidate is always
// returned; a later one only while now is before the deadline. false: no
// candidate left to try (Err says why).
func (a *Attempts) Next(now time.Time) (h *Host, until time.Time, ok bool) {
	a.Release()
	a.cur = nil
	if a.next >= len(a.hosts) || a.next > 0 && !a.deadline.IsZero() && !now.Before(a.deadline) {
		return nil, time.Time{}, false
	}
	h = a.hosts[a.next]
	a.next++
	a.cur, a.held = h, h
	h.active.Add(1)
	if !a.deadline.IsZero() {
		until = attemptDeadline(now, a.deadline, len(a.hosts)-a.next+1)
	}
	return h, until, true
}

// attemptDeadline is the deadline of an attempt started at now on the
// first of left candidates, all of which must fit before deadline.
func attemptDeadline(now, deadline time.Time, left int) time.Time {
	rest := deadline.Sub(now)
	if left <= 1 || rest <= MinAttemptTimeout {
		return deadline
	}
	share := max(rest/time.Duration(left), MinAttemptTimeout)
	return now.Add(share)
}

// Current returns the candidate of the attempt in progress, nil before
// the first Next and after the last.
func (a *Attempts) Current() *Host { return a.cur }

// Succeeded reports that the attempt on the current candidate connected.
// The walk keeps holding its active count until Release (or Keep): the
// connection counts while it lasts. A step that fails later (an event
// loop's replay) may still call Failed.
func (a *Attempts) Succeeded() {
	if a.cur != nil && a.report != nil {
		a.report.ReportDial(a.cur, nil)
	}
}

// Failed reports that the attempt on the current candidate failed with
// err, the upstream's fault: err counts in its passive health, goes into
// Err's text, and the candidate's active count is released.
func (a *Attempts) Failed(err error) {
	if a.cur != nil && a.report != nil {
		a.report.ReportDial(a.cur, err)
	}
	a.Excused(err)
}

// Excused records that the attempt on the current candidate failed with
// err for a reason that says nothing of the candidate (the attempt was
// cancelled from outside, or the client's own offer made it fail): into
// Err's text, the active count released, passive health not told.
func (a *Attempts) Excused(err error) {
	if a.cur == nil {
		return
	}
	a.errs = append(a.errs, fmt.Errorf("upstream %s: %w", a.cur.addr, err))
	a.Release()
}

// Release gives back the active count the walk holds, if any: when the
// connection of a successful attempt ends. Calling it again has no
// further effect.
func (a *Attempts) Release() {
	if a.held != nil {
		a.held.active.Add(-1)
		a.held = nil
	}
}

// Keep hands the active count the walk holds to the returned func, which
// gives it back once, however often it is called; a walk that holds none
// returns a func that does nothing. For a caller whose connection
// outlives the walk.
func (a *Attempts) Keep() (release func()) {
	h := a.held
	a.held = nil
	if h == nil {
		return func() {}
	}
	return h.releaser()
}

// Done ends a successful walk: it drops the candidates and the errors of
// the failed attempts, keeping the active count held until Release.
// Next returns false from then on.
func (a *Attempts) Done() {
	a.hosts, a.errs, a.next = nil, nil, 0
}

// Tried returns the number of failed attempts so far.
func (a *Attempts) Tried() int { return len(a.errs) }

// Len returns the number of candidates the walk started with.
func (a *Attempts) Len() int { return len(a.hosts) }

// Err is the walk's failure: ErrNoHealthy when there was no candidate,
// else how many of the candidates were tried (within the budget, when
// the walk has one) and each one's error.
func (a *Attempts) Err() error {
	if len(a.hosts) == 0 {
		return fmt.Errorf("%w (every upstream is down, draining or in maintenance)", ErrNoHealthy)
	}
	if a.budget > 0 {
		return fmt.Errorf("%d of %d upstreams tried within timeouts.connect (%v), all failed: %w",
			len(a.errs), len(a.hosts), a.budget, errors.Join(a.errs...))
	}
	return fmt.Errorf("%d of %d upstreams tried, all failed: %w", len(a.errs), len(a.hosts), errors.Join(a.errs...))
}
