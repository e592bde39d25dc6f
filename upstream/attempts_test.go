package upstream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snigate/snigate/oci"
)

func TestAttemptDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name string
		rest time.Duration
		left int
		want time.Duration
	}{
		{name: "last candidate gets the rest", rest: 5 * time.Second, left: 1, want: 5 * time.Second},
		{name: "even share", rest: 5 * time.Second, left: 2, want: 2500 * time.Millisecond},
		{name: "floor", rest: time.Second, left: 10, want: MinAttemptTimeout},
		{name: "never past the deadline", rest: 300 * time.Millisecond, left: 3, want: 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := attemptDeadline(now, now.Add(tt.rest), tt.left).Sub(now); got != tt.want {
				t.Errorf("attempt of %v with %d left: %v, want %v", tt.rest, tt.left, got, tt.want)
			}
		})
	}
}

func testHosts(addrs ...string) []*Host {
	hs := make([]*Host, len(addrs))
	for i, a := range addrs {
		hs[i] = newHost(a, nil)
	}
	return hs
}

// reports records what a walk told passive health.
type reports []string

func (r *reports) ReportDial(h *Host, err error) {
	*r = append(*r, fmt.Sprintf("%s %v", h.Addr(), err))
}

// attemptStep is one call of Attempts.Next and what it gives.
type attemptStep struct {
	at        time.Duration // when Next is called, since t0
	wantAddr  string        // "": Next returns false
	wantUntil time.Duration // since t0
}

// attemptsCases are candidates, a budget and the walk's steps over them.
var attemptsCases = []struct {
	name   string
	addrs  []string
	budget time.Duration
	steps  []attemptStep
}{
	{name: "even shares of the time left", addrs: []string{"a:1", "b:1", "c:1"}, budget: 3 * time.Second, steps: []attemptStep{
		{at: 0, wantAddr: "a:1", wantUntil: time.Second},
		{at: time.Second, wantAddr: "b:1", wantUntil: 2 * time.Second},
		{at: 1500 * time.Millisecond, wantAddr: "c:1", wantUntil: 3 * time.Second},
		{at: 1600 * time.Millisecond},
	}},
	{name: "a black hole uses its share, the next gets the rest", addrs: []string{"a:1", "b:1"}, budget: 5 * time.Second, steps: []attemptStep{
		{at: 0, wantAddr: "a:1", wantUntil: 2500 * time.Millisecond},
		{at: 2500 * time.Millisecond, wantAddr: "b:1", wantUntil: 5 * time.Second},
	}},
	{name: "no time left: no next candidate", addrs: []string{"a:1", "b:1"}, budget: time.Second, steps: []attemptStep{
		{at: 0, wantAddr: "a:1", wantUntil: 500 * time.Millisecond},
		{at: time.Second},
	}},
	{name: "the first is tried even when late", addrs: []string{"a:1"}, budget: time.Second, steps: []attemptStep{
		{at: 2 * time.Second, wantAddr: "a:1", wantUntil: time.Second},
		{at: 2 * time.Second},
	}},
	{name: "no budget: every candidate, no deadline", addrs: []string{"a:1", "b:1"}, steps: []attemptStep{
		{at: 0, wantAddr: "a:1"},
		{at: time.Hour, wantAddr: "b:1"},
		{at: time.Hour},
	}},
	{name: "no candidates", steps: []attemptStep{{at: 0}}},
}

// TestAttemptsOrderAndShares: the walk gives the candidates in order,
// each with its share of the time left when its attempt starts, and ends
// when the candidates or the time run out (the first is always tried).
func TestAttemptsOrderAndShares(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tt := range attemptsCases {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAttempts(testHosts(tt.addrs...), t0, tt.budget, nil)
			for i, s := range tt.steps {
				h, until, ok := a.Next(t0.Add(s.at))
				if s.wantAddr == "" {
					if ok {
						t.Fatalf("step %d: Next gave %s, want none", i, h.Addr())
					}
					continue
				}
				if !ok || h.Addr() != s.wantAddr || a.Current() != h {
					t.Fatalf("step %d: Next gave %v %v, want %s", i, h, ok, s.wantAddr)
				}
				wantUntil := time.Time{}
				if tt.budget > 0 {
					wantUntil = t0.Add(s.wantUntil)
				}
				if !until.Equal(wantUntil) {
					t.Errorf("step %d: %s until %v, want %v", i, s.wantAddr, until.Sub(t0), s.wantUntil)
				}
				a.Failed(errors.New("refused"))
			}
		})
	}
}

// TestAttemptsActiveCount: the candidate being tried counts one active
// connection; a failure gives it back, a success keeps it until Release
// or Keep's func, each of which gives it back once.
func TestAttemptsActiveCount(t *testing.T) {
	hs := testHosts("a:1", "b:1")
	a := NewAttempts(hs, time.Unix(0, 0), time.Second, nil)
	active := func(want0, want1 int64) {
		t.Helper()
		if hs[0].Active() != want0 || hs[1].Active() != want1 {
			t.Fatalf("active %d, %d; want %d, %d", hs[0].Active(), hs[1].Active(), want0, want1)
		}
	}
	a.Next(time.Unix(0, 0))
	active(1, 0)
	a.Failed(errors.New("refused"))
	active(0, 0)
	a.Next(time.Unix(0, 0))
	active(0, 1)
	a.Succeeded()
	active(0, 1)
	release := a.Keep()
	a.Release() // Keep took the count: nothing left to release
	active(0, 1)
	release()
	release()
	active(0, 0)

	b := NewAttempts(hs, time.Unix(0, 0), time.Second, nil)
	b.Next(time.Unix(0, 0))
	b.Succeeded()
	b.Done()
	active(1, 0)
	b.Release()
	b.Release()
	active(0, 0)
	if _, _, ok := b.Next(time.Unix(0, 0)); ok {
		t.Fatal("Next after Done gave a candidate")
	}
	b.Keep()() // nothing held: a func that does nothing
	active(0, 0)
}

// TestAttemptsPassiveHealth: Failed and Succeeded tell the reporter,
// Excused (a failure that says nothing of the upstream) does not; every
// failure goes into Err either way.
func TestAttemptsPassiveHealth(t *testing.T) {
	var got reports
	a := NewAttempts(testHosts("a:1", "b:1", "c:1"), time.Unix(0, 0), 0, &got)
	a.Next(time.Unix(0, 0))
	a.Failed(errors.New("refused"))
	a.Next(time.Unix(0, 0))
	a.Excused(errors.New("unrecognized name"))
	a.Next(time.Unix(0, 0))
	a.Succeeded()
	want := reports{"a:1 refused", "c:1 <nil>"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reported %q, want %q", got, want)
	}
	if a.Tried() != 2 {
		t.Errorf("Tried %d, want 2", a.Tried())
	}
	n := NewAttempts(testHosts("a:1"), time.Unix(0, 0), 0, nil) // no reporter
	n.Next(time.Unix(0, 0))
	n.Failed(errors.New("refused"))
	n.Succeeded() // after the walk's end: no current candidate
}

// TestAttemptsErr: the one error text of a failed walk, wrapping
// ErrNoHealthy (which is oci.ErrNoUpstream) when there was no candidate,
// and each attempt's cause otherwise.
func TestAttemptsErr(t *testing.T) {
	errRefused := errors.New("connection refused")
	tests := []struct {
		name     string
		addrs    []string
		budget   time.Duration
		fail     int
		want     string
		noHealth bool
	}{
		{name: "no candidate", want: "no healthy upstream (every upstream is down, draining or in maintenance)", noHealth: true},
		{name: "all failed within the budget", addrs: []string{"a:1", "b:1"}, budget: 5 * time.Second, fail: 2,
			want: "2 of 2 upstreams tried within timeouts.connect (5s), all failed: upstream a:1: connection refused\nupstream b:1: connection refused"},
		{name: "stopped early", addrs: []string{"a:1", "b:1", "c:1"}, budget: 5 * time.Second, fail: 1,
			want: "1 of 3 upstreams tried within timeouts.connect (5s), all failed: upstream a:1: connection refused"},
		{name: "no budget", addrs: []string{"a:1", "b:1"}, fail: 2,
			want: "2 of 2 upstreams tried, all failed: upstream a:1: connection refused\nupstream b:1: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAttempts(testHosts(tt.addrs...), time.Unix(0, 0), tt.budget, nil)
			for range tt.fail {
				if _, _, ok := a.Next(time.Unix(0, 0)); !ok {
					t.Fatal("Next: no candidate")
				}
				a.Failed(errRefused)
			}
			err := a.Err()
			if err.Error() != tt.want {
				t.Errorf("Err:\n%s\nwant:\n%s", err, tt.want)
			}
			if errors.Is(err, ErrNoHealthy) != tt.noHealth || errors.Is(err, oci.ErrNoUpstream) != tt.noHealth {
				t.Errorf("errors.Is(ErrNoHealthy) %v, want %v", errors.Is(err, ErrNoHealthy), tt.noHealth)
			}
			if errors.Is(err, errRefused) != (tt.fail > 0) {
				t.Errorf("errors.Is(cause) %v, want %v", errors.Is(err, errRefused), tt.fail > 0)
			}
		})
	}
}

// TestAttemptsSuccessAllocatesNothing: a walk that connects on its first
// candidate allocates nothing (the event loop embeds it in its
// connection, and the goroutine path's Keep is the one allocation it
// adds).
func TestAttemptsSuccessAllocatesNothing(t *testing.T) {
	hosts := testHosts("a:1", "b:1")
	var rep Reporter = &nopReporter{}
	now := time.Unix(0, 0)
	allocs := testing.AllocsPerRun(100, func() {
		a := NewAttempts(hosts, now, time.Second, rep)
		if _, _, ok := a.Next(now); !ok {
			t.Fatal("no candidate")
		}
		a.Succeeded()
		a.Done()
		a.Release()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per successful walk, want 0", allocs)
	}
}

type nopReporter struct{}

func (*nopReporter) ReportDial(*Host, error) {}

// TestAttemptsBlackHoleUsesItsShare: with the clock of a synctest bubble,
// a candidate that never answers holds its attempt until its share of
// timeouts.connect ends, not the whole budget, and the next candidate
// still gets the rest.
func TestAttemptsBlackHoleUsesItsShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hosts := testHosts("hole:1", "good:1")
		start := time.Now()
		a := NewAttempts(hosts, start, 5*time.Second, nil)
		h, until, _ := a.Next(time.Now())
		ctx, cancel := context.WithDeadline(t.Context(), until)
		<-ctx.Done() // the black hole: nothing but the deadline ends it
		cancel()
		if took := time.Since(start); h.Addr() != "hole:1" || took != 2500*time.Millisecond {
			t.Fatalf("attempt on %s ended after %v, want hole:1 after 2.5s", h.Addr(), took)
		}
		a.Failed(ctx.Err())
		h, until, ok := a.Next(time.Now())
		if !ok || h.Addr() != "good:1" || !until.Equal(start.Add(5*time.Second)) {
			t.Fatalf("next: %v %v until %v, want good:1 until the budget's end", h, ok, until.Sub(start))
		}
		a.Succeeded()
		a.Release()
		if got := a.Tried(); got != 1 {
			t.Errorf("Tried %d, want 1", got)
		}
	})
}
