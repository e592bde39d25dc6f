package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// Failover timing. A killed upstream is seen down at the fall-th failed
// check: at most healthFall*healthInterval after the kill; it is up again
// at the rise-th good check after it is back. ctlSlack covers scheduling
// on a loaded CI machine and the time `snigate ctl` itself takes.
const (
	failoverPulls = 6
	killAfterPull = 2
	ctlSlack      = 2 * time.Second
	ctlStep       = 100 * time.Millisecond
)

// TestFailover stops registry B in the middle of a series of pulls: every
// pull succeeds (a failed dial is retried on the next upstream), the
// gateway reports B down (ctl and log) within fall*interval, and up again
// once B is back.
func TestFailover(t *testing.T) {
	w := getWorld(t)
	b := w.regB
	t.Cleanup(func() { w.restoreRegistry(t, b) })

	var killedAt time.Time
	for i := 1; i <= failoverPulls; i++ {
		w.mustPullSkopeo(t, registryHost, w.gatewayCerts)
		switch i {
		case killAfterPull:
			b.proc.kill()
			killedAt = time.Now()
			t.Logf("pull %d ok; killed %s (%s)", i, b.name, b.addr)
			w.bridgeGetTwice(t) // round robin: one of the two picks B
		case killAfterPull + 1:
			w.waitHealth(t, b.addr, "down", killedAt, healthFall*healthInterval+ctlSlack)
			w.wantLoggedHealth(t, b.addr, "down")
		case failoverPulls - 1:
			if err := w.startRegistry(b); err != nil {
				t.Fatalf("restart %s: %v", b.name, err)
			}
			w.waitHealth(t, b.addr, "up", time.Now(), healthRise*healthInterval+ctlSlack)
			w.wantLoggedHealth(t, b.addr, "up")
		}
	}
}

// bridgeGetTwice makes two requests on new connections through the bridge:
// both must succeed although one upstream is dead and not yet seen down.
func (w *world) bridgeGetTwice(t *testing.T) {
	t.Helper()
	for i := range 2 {
		status, err := w.bridgeGet(t, "/v2/")
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET /v2/ #%d through the bridge with an upstream dead: status %d, err %v; want 200 (retry on the next upstream)",
				i+1, status, err)
		}
	}
}

// waitHealth polls `snigate ctl upstreams` until the registry route's
// upstream addr shows want, failing t if that takes longer than within
// after since.
func (w *world) waitHealth(t *testing.T, addr, want string, since time.Time, within time.Duration) {
	t.Helper()
	var last result
	tries := int((within - time.Since(since)) / ctlStep)
	err := poll(max(tries, 1), ctlStep, func() error {
		got, r, err := w.gw.ctlHealth("registry", addr)
		last = r
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s is %s", addr, got)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snigate ctl upstreams: %s not %s within %s: %v\n%s", addr, want, within, err, last)
	}
	t.Logf("ctl shows %s %s %s after", addr, want, time.Since(since).Round(10*time.Millisecond))
}

// wantLoggedHealth checks that the gateway's last health change logged for
// addr is to want.
func (w *world) wantLoggedHealth(t *testing.T, addr, want string) {
	t.Helper()
	changes, err := w.gw.healthChanges("registry", addr)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 || changes[len(changes)-1] != want {
		t.Fatalf(`gateway log: "upstream health changed" for %s went %v; want the last to be %q`, addr, changes, want)
	}
}

// restoreRegistry brings r back (a failed test must not leave the world
// short of an upstream) and waits until the gateway has it up again.
func (w *world) restoreRegistry(t *testing.T, r *registry) {
	if r.proc.running() {
		return
	}
	if err := w.startRegistry(r); err != nil {
		t.Errorf("restart %s: %v", r.name, err)
		return
	}
	if err := w.gw.waitAllHealthy(); err != nil {
		t.Errorf("after restarting %s: %v", r.name, err)
	}
}
