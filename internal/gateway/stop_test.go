package gateway

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeClock is the clock stop requests are timed with, moved by the test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// stopWorld is a running gateway with one open splice tunnel, a drain
// budget of ten minutes, and its signals and stop clock in the test's hands.
type stopWorld struct {
	*world
	sigs   chan os.Signal // nil: real signals
	clock  *fakeClock
	tunnel *tls.Conn
}

func newStopWorld(t *testing.T, realSignals bool, setup func(*Gateway)) *stopWorld {
	t.Helper()
	sw := &stopWorld{world: newWorld(t, ""), clock: newFakeClock()}
	if !realSignals {
		sw.sigs = make(chan os.Signal, 4)
	}
	a := startEcho(t, sw.leaf("a.test"), nil)
	sw.writeConfig(fmt.Sprintf(spliceConfig, "10m", spliceRoute("a", "a.test", a.addr())))
	sw.world.setup = func(g *Gateway) {
		g.signals, g.now = sw.sigs, sw.clock.Now
		if setup != nil {
			setup(g)
		}
	}
	sw.start()
	tunnel, err := sw.dialTLS("a.test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tunnel.Close() })
	echoRoundTrip(t, tunnel, "open")
	sw.tunnel = tunnel
	return sw
}

// signal delivers sig to the gateway: on the test's channel, or to the
// process when the world uses real signals.
func (sw *stopWorld) signal(sig os.Signal) {
	sw.t.Helper()
	if sw.sigs != nil {
		sw.sigs <- sig
		return
	}
	if err := syscall.Kill(os.Getpid(), sig.(syscall.Signal)); err != nil {
		sw.t.Fatal(err)
	}
}

// waitLog waits for the n-th log line containing sub.
func (sw *stopWorld) waitLog(sub string, n int) {
	sw.t.Helper()
	sw.logs.WaitFor(sw.t, func(text string) bool { return strings.Count(text, sub) >= n },
		func(text string) string { return fmt.Sprintf("no %d log lines with %q; log:\n%s", n, sub, text) })
}

// wantStillDraining checks that the tunnel still carries bytes and Run
// has not returned, then ends the tunnel and expects a clean stop.
func (sw *stopWorld) wantStillDraining() {
	sw.t.Helper()
	echoRoundTrip(sw.t, sw.tunnel, "the download goes on while draining")
	select {
	case <-sw.done:
		sw.t.Fatalf("Run returned %v while the drain should go on", sw.runErr)
	default:
	}
	sw.tunnel.Close()
	<-sw.done
	if sw.runErr != nil {
		sw.t.Errorf("Run = %v, want nil after the tunnel finished", sw.runErr)
	}
}

// wantCut checks that Run stopped at once and closed the tunnel.
func (sw *stopWorld) wantCut() {
	sw.t.Helper()
	<-sw.done
	if !errors.Is(sw.runErr, ErrForcedStop) {
		sw.t.Errorf("Run = %v, want ErrForcedStop", sw.runErr)
	}
	sw.tunnel.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(sw.tunnel); errors.Is(err, os.ErrDeadlineExceeded) {
		sw.t.Error("the tunnel is still open after a stop now")
	}
}

// Regression: two SIGTERMs that arrive together (coreutils timeout,
// kill -- -PGID, an init signalling the process group) counted as "stop
// now" and cut every download in progress; so did a SIGHUP while draining.
// A repeat of SIGTERM/SIGINT within RepeatStopWindow is the same request;
// SIGQUIT, or a repeat later than that, is "stop now".
func TestStopSignals(t *testing.T) {
	tests := []struct {
		name      string
		first     os.Signal     // nil: the second arrives while running
		after     time.Duration // the stop clock moves this much between the two
		second    os.Signal
		wantLog   string // logged for the second signal
		wantForce bool
	}{
		{name: "SIGTERM twice at once is one request", first: syscall.SIGTERM, second: syscall.SIGTERM,
			wantLog: "msg=\"stop signal repeated: the same stop request, still draining\" signal=terminated since_first=0s"},
		{name: "SIGINT at the end of the window is the same request", first: syscall.SIGTERM, after: RepeatStopWindow, second: syscall.SIGINT,
			wantLog: "msg=\"stop signal repeated: the same stop request, still draining\" signal=interrupt since_first=2s"},
		{name: "SIGHUP while draining reloads nothing and stops nothing", first: syscall.SIGINT, after: time.Minute, second: syscall.SIGHUP,
			wantLog: "msg=\"reload ignored while draining\" signal=hangup"},
		{name: "SIGTERM after the window stops now", first: syscall.SIGTERM, after: RepeatStopWindow + time.Millisecond, second: syscall.SIGTERM,
			wantLog: "msg=\"stop now: closing the remaining connections\" signal=terminated since_first=2.001s connections=1", wantForce: true},
		{name: "SIGQUIT while draining stops now", first: syscall.SIGTERM, second: syscall.SIGQUIT,
			wantLog: "msg=\"stop now: closing the remaining connections\" signal=quit", wantForce: true},
		{name: "SIGQUIT while running stops now", second: syscall.SIGQUIT,
			wantLog: "msg=\"stop now: closing every connection\" signal=quit connections=1", wantForce: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := newStopWorld(t, false, nil)
			if tt.first != nil {
				sw.signal(tt.first)
				sw.waitLog("msg=\"stop signal received\"", 1)
			}
			sw.clock.advance(tt.after)
			sw.signal(tt.second)
			if tt.wantForce {
				sw.wantCut()
				if !sw.logs.Contains(tt.wantLog) {
					t.Errorf("log has no line with %q", tt.wantLog)
				}
				return
			}
			sw.waitLog(tt.wantLog, 1)
			sw.wantStillDraining()
		})
	}
}

// TestRealStopSignals sends the signals to the process: Run handles SIGTERM
// twice as one request, and SIGQUIT as "stop now" rather than Go's default
// (a goroutine dump and exit 2, which would end this test binary).
func TestRealStopSignals(t *testing.T) {
	sw := newStopWorld(t, true, nil)
	sw.signal(syscall.SIGTERM)
	sw.waitLog("msg=\"stop signal received\" signal=terminated", 1)
	sw.signal(syscall.SIGTERM)
	sw.waitLog("msg=\"stop signal repeated: the same stop request, still draining\" signal=terminated", 1)
	echoRoundTrip(t, sw.tunnel, "still open after the repeat")
	sw.signal(syscall.SIGQUIT)
	sw.wantCut()
}

// TestDrainLogsOpenConnections: while draining, the gateway logs the
// connections still open and the budget left, every DrainLogInterval.
func TestDrainLogsOpenConnections(t *testing.T) {
	sw := newStopWorld(t, false, func(g *Gateway) { g.drainLogPeriod = time.Millisecond })
	sw.signal(syscall.SIGTERM)
	sw.waitLog("msg=draining connections=1 remaining=10m0s", 1) // at the start
	sw.waitLog("msg=draining connections=1 remaining=", 3)      // and then periodically
	sw.wantStillDraining()
}
