package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snigate/snigate/internal/testkit"
	"go.uber.org/goleak"
)

func TestFallRiseMovesTraffic(t *testing.T) {
	pki := newPKI(t)
	tests := []struct {
		name string
		kind CheckKind
	}{
		{"tcp", CheckTCP},
		{"tls", CheckTLS},
		{"http", CheckHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srvCfg := serverConfig(pki.server, pki.ca.pool, 0)
			a, b := startUpstream(t, srvCfg), startUpstream(t, srvCfg)
			var logs testkit.LogSink
			const fall, rise = 3, 2
			p := mustPool(t, Config{
				Addrs:         []string{a.addr, b.addr},
				Check:         Check{Kind: tt.kind, Fall: fall, Rise: rise, Timeout: 5 * time.Second},
				TLSConfigFunc: func() *tls.Config { return pki.clientConfig(&pki.client) },
				Logger:        logs.Logger(),
			})
			rounds(p, 1)
			wantCandidates(t, p, a.addr, b.addr)

			a.stop()
			rounds(p, fall-1)
			wantCandidates(t, p, a.addr, b.addr) // fall-1 failures are not enough
			rounds(p, 1)
			wantCandidates(t, p, b.addr)
			if got := logs.Lines("upstream health changed"); len(got) != 1 ||
				!strings.Contains(got[0], "upstream="+a.addr) || !strings.Contains(got[0], "from=up to=down") ||
				!strings.Contains(got[0], "connection refused") {
				t.Fatalf("log after going down: %q, want one line naming %s, from=up to=down and the error", got, a.addr)
			}

			a.start()
			rounds(p, rise-1)
			wantCandidates(t, p, b.addr) // rise-1 passes are not enough
			rounds(p, 1)
			wantCandidates(t, p, a.addr, b.addr)
			if got := logs.Lines("upstream health changed"); len(got) != 2 || !strings.Contains(got[1], "from=down to=up") {
				t.Fatalf("log after coming back: %q, want a second line from=down to=up", got)
			}
			if got := logs.Lines("level=DEBUG msg=\"health check\""); len(got) != 2*(1+fall+rise) {
				t.Errorf("%d debug lines for probes, want %d", len(got), 2*(1+fall+rise))
			}
		})
	}
}

// wantCandidates checks that repeated Candidates calls offer exactly addrs
// (in any rotation).
func wantCandidates(t *testing.T, p *Pool, addrs ...string) {
	t.Helper()
	for range len(addrs) + 1 {
		got := addrsOf(p.Candidates())
		slices.Sort(got)
		want := slices.Sorted(slices.Values(addrs))
		if !slices.Equal(got, want) {
			t.Fatalf("Candidates() = %v, want %v", got, want)
		}
	}
}

func TestAllDownLeavesNoCandidates(t *testing.T) {
	a, b := startUpstream(t, serverConfig(newPKI(t).server, nil, 0)), startUpstream(t, serverConfig(newPKI(t).server, nil, 0))
	p := mustPool(t, Config{Addrs: []string{a.addr, b.addr}, Check: Check{Fall: 2}})
	a.stop()
	b.stop()
	rounds(p, 2)
	if got := p.Candidates(); len(got) != 0 {
		t.Fatalf("Candidates() with every upstream down = %v, want none", addrsOf(got))
	}
	for _, s := range p.Status() {
		if s.Healthy || s.LastError == "" {
			t.Errorf("status %+v: want unhealthy with the last error", s)
		}
	}
}

func TestRiseFallCountOnlyConsecutiveResults(t *testing.T) {
	u := startUpstream(t, serverConfig(newPKI(t).server, nil, 0))
	p := mustPool(t, Config{Addrs: []string{u.addr}, Check: Check{Fall: 2, Rise: 2}})
	steps := []struct {
		up          bool // server running for this round
		wantHealthy bool
	}{
		{false, true}, {true, true}, {false, true}, // fail, pass, fail: never 2 in a row
		{false, false},                               // second consecutive failure
		{true, false}, {false, false}, {true, false}, // pass, fail, pass: never 2 in a row
		{true, true}, // second consecutive pass
	}
	for i, s := range steps {
		if s.up && u.srv == nil {
			u.start()
		}
		if !s.up && u.srv != nil {
			u.stop()
		}
		rounds(p, 1)
		if got := p.Status()[0].Healthy; got != s.wantHealthy {
			t.Fatalf("round %d: healthy = %v, want %v", i+1, got, s.wantHealthy)
		}
	}
}

func TestMaintPausesChecksAndDrainDoesNot(t *testing.T) {
	pki := newPKI(t)
	u := startUpstream(t, serverConfig(pki.server, nil, 0))
	p := mustPool(t, Config{
		Addrs:         []string{u.addr},
		Check:         Check{Kind: CheckHTTP},
		TLSConfigFunc: func() *tls.Config { return pki.clientConfig(nil) },
	})
	steps := []struct {
		state        State
		wantRequests int64 // after two more rounds
		wantOffered  bool
	}{
		{StateReady, 2, true},
		{StateDrain, 4, false}, // checks continue
		{StateMaint, 4, false}, // checks paused: the server sees nothing
		{StateReady, 6, true},  // resumed
	}
	for _, s := range steps {
		if err := p.SetState(u.addr, s.state); err != nil {
			t.Fatal(err)
		}
		rounds(p, 2)
		if got := u.requests.Load(); got != s.wantRequests {
			t.Errorf("%s: server saw %d checks, want %d", s.state, got, s.wantRequests)
		}
		if got := len(p.Candidates()) == 1; got != s.wantOffered {
			t.Errorf("%s: offered to new connections = %v, want %v", s.state, got, s.wantOffered)
		}
	}
}

func TestRunExitsOnCancel(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs last: after the servers stop
	pki := newPKI(t)
	u := startUpstream(t, serverConfig(pki.server, nil, 0))
	checked := make(chan struct{}, 8)
	p := mustPool(t, Config{
		Addrs: []string{u.addr, "127.0.0.1:1"},
		Check: Check{Interval: time.Hour},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			defer func() { checked <- struct{}{} }()
			return new(net.Dialer).DialContext(ctx, network, addr)
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	<-checked // the first round runs at once
	<-checked
	if err := p.Run(ctx); err == nil {
		t.Error("a second concurrent Run succeeded, want an error")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
}

// fakeDialer counts dials per address and fails them while down is set.
type fakeDialer struct {
	dials atomic.Int64
	down  atomic.Bool
}

func (d *fakeDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	if d.down.Load() {
		return nil, errors.New("connection refused (fake)")
	}
	c1, c2 := net.Pipe()
	_ = c2.Close()
	return c1, nil
}

func TestRunTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 3 * time.Second
		var d fakeDialer
		p := mustPool(t, Config{
			Addrs:       []string{"10.0.0.1:443"},
			Check:       Check{Interval: interval, Fall: 3, Rise: 2},
			DialContext: d.DialContext,
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()

		synctest.Wait()
		wantDials(t, &d, 1, "right after Run starts")
		time.Sleep(interval)
		synctest.Wait()
		wantDials(t, &d, 2, "after one interval")

		d.down.Store(true)
		time.Sleep(2 * interval)
		synctest.Wait()
		if !p.Status()[0].Healthy {
			t.Fatal("down after 2 failed checks, want fall=3")
		}
		time.Sleep(interval)
		synctest.Wait()
		if p.Status()[0].Healthy {
			t.Fatal("healthy after 3 failed checks, want down")
		}

		if err := p.SetState("10.0.0.1:443", StateMaint); err != nil {
			t.Fatal(err)
		}
		before := d.dials.Load()
		time.Sleep(10 * interval)
		synctest.Wait()
		wantDials(t, &d, before, "after 10 intervals in maint")

		d.down.Store(false)
		if err := p.SetState("10.0.0.1:443", StateReady); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantDials(t, &d, before+1, "right after leaving maint")

		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func wantDials(t *testing.T, d *fakeDialer, want int64, when string) {
	t.Helper()
	if got := d.dials.Load(); got != want {
		t.Fatalf("%s: %d checks, want %d", when, got, want)
	}
}

// stallDialer records when each check dials and how many run at once. A
// dial listed in stall (by its number, from 0) takes that long whatever its
// context says, as a check can overrun its timeout by a slow close or a
// busy machine; release, when set, holds the first dial until it is closed.
type stallDialer struct {
	mu       sync.Mutex
	starts   []time.Duration // since epoch, per dial
	inFlight int
	maxIn    int
	epoch    time.Time
	stall    map[int]time.Duration
	release  chan struct{}
}

func (d *stallDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	n := len(d.starts)
	d.starts = append(d.starts, time.Since(d.epoch))
	d.inFlight++
	d.maxIn = max(d.maxIn, d.inFlight)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.inFlight--
		d.mu.Unlock()
	}()
	time.Sleep(d.stall[n])
	if n == 0 && d.release != nil {
		<-d.release
	}
	c1, c2 := net.Pipe()
	_ = c2.Close()
	return c1, nil
}

func (d *stallDialer) snapshot() (starts []time.Duration, maxInFlight int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.starts), d.maxIn
}

// Regression: the health loop ran on a ticker, so a check that ended after
// the next one was due was followed at once by one more and then by a tick
// of the old grid, a fraction of an interval later. With timeout equal to
// interval (now valid) that is the normal case of a slow upstream.
func TestLateCheckDelaysTheNextWithoutCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 3 * time.Second
		d := &stallDialer{epoch: time.Now(), stall: map[int]time.Duration{0: 5 * time.Second}}
		p := mustPool(t, Config{
			Addrs:       []string{"10.0.0.1:443"},
			Check:       Check{Interval: interval, Timeout: interval},
			DialContext: d.DialContext,
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		time.Sleep(12 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		starts, maxIn := d.snapshot()
		// 0s: takes 5s; 5s: at once, it was due at 3s; then one interval
		// after each start.
		want := []time.Duration{0, 5 * time.Second, 8 * time.Second, 11 * time.Second}
		if !slices.Equal(starts, want) {
			t.Errorf("checks started at %v, want %v", starts, want)
		}
		if maxIn != 1 {
			t.Errorf("%d checks in flight at once, want 1", maxIn)
		}
	})
}

// Regression: a pool that adopted a host started checking it while the
// previous pool's check of the same host was still in flight (Adopt may
// come before the old pool stops), and CheckOnce beside Run did the same:
// two checks of one upstream at once.
func TestOneHostNeverHasTwoChecksInFlight(t *testing.T) {
	tests := []struct {
		name   string
		second func(t *testing.T, ctx context.Context, old *Pool, cfg Config) func() // starts the second checker, returns its wait
	}{
		{name: "adopting pool", second: func(t *testing.T, ctx context.Context, old *Pool, cfg Config) func() {
			p := mustPool(t, cfg)
			p.Adopt(old)
			done := make(chan error)
			go func() { done <- p.Run(ctx) }()
			return func() { <-done }
		}},
		{name: "CheckOnce beside Run", second: func(_ *testing.T, ctx context.Context, old *Pool, _ Config) func() {
			done := make(chan struct{})
			go func() { old.CheckOnce(ctx); close(done) }()
			return func() { <-done }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &stallDialer{epoch: time.Now(), release: make(chan struct{})}
				cfg := Config{Addrs: []string{"10.0.0.1:443"}, Check: Check{Interval: time.Hour}, DialContext: d.DialContext}
				old := mustPool(t, cfg)
				ctx, cancel := context.WithCancel(t.Context())
				oldDone := make(chan error)
				go func() { oldDone <- old.Run(ctx) }()
				synctest.Wait() // old's first check is in flight, held by release
				wait := tt.second(t, ctx, old, cfg)
				synctest.Wait()
				if starts, _ := d.snapshot(); len(starts) != 1 {
					t.Errorf("%d checks started while the first is in flight, want it alone", len(starts))
				}
				close(d.release)
				synctest.Wait()
				starts, maxIn := d.snapshot()
				if len(starts) != 2 || maxIn != 1 {
					t.Errorf("after the first check ended: %d checks, at most %d at once; want 2, one at a time", len(starts), maxIn)
				}
				cancel()
				wait()
				if err := <-oldDone; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
