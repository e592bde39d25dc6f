package upstream

import (
	"crypto/tls"
	"errors"
	"github.com/snigate/snigate/internal/testkit"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

var errBlackHole = errors.New("TLS handshake: context deadline exceeded")

// TestReportDialMarksDownAfterFall: Check.Fall consecutive failed traffic
// dials mark a host down at once (HAProxy's observe layer4); a success in
// between resets the run, and this process's own failures do not count.
func TestReportDialMarksDownAfterFall(t *testing.T) {
	emfile := os.NewSyscallError("socket", syscall.EMFILE)
	tests := []struct {
		name    string
		reports []error
		healthy bool
	}{
		{name: "fall failures in a row", reports: []error{errBlackHole, errBlackHole, errBlackHole}, healthy: false},
		{name: "fewer than fall", reports: []error{errBlackHole, errBlackHole}, healthy: true},
		{name: "a success resets the run", reports: []error{errBlackHole, errBlackHole, nil, errBlackHole, errBlackHole}, healthy: true},
		{name: "out of descriptors is ours", reports: []error{emfile, emfile, emfile, emfile}, healthy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs testkit.LogSink
			p := mustPool(t, Config{Addrs: []string{"192.0.2.1:443", "192.0.2.2:443"}, Check: Check{Fall: 3}, Logger: logs.Logger()})
			h := p.host("192.0.2.1:443")
			for _, err := range tt.reports {
				p.ReportDial(h, err)
			}
			if h.Healthy() != tt.healthy {
				t.Fatalf("healthy %v after %v, want %v", h.Healthy(), tt.reports, tt.healthy)
			}
			lines := logs.Lines("upstream health changed")
			if tt.healthy {
				if len(lines) != 0 {
					t.Errorf("health change logged: %q", lines)
				}
				return
			}
			if got := addrsOf(p.Candidates()); len(got) != 1 || got[0] != "192.0.2.2:443" {
				t.Errorf("Candidates() = %v, want only the other host", got)
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "check=passive") || !strings.Contains(lines[0], "from=up to=down") {
				t.Errorf("log %q, want one line from=up to=down check=passive", lines)
			}
			if st := p.Status()[0]; !strings.Contains(st.LastError, "passive: 3 consecutive failed connections") {
				t.Errorf("last_error %q, want it to say the traffic took it down", st.LastError)
			}
		})
	}
}

// TestPassiveDownComesBackOnlyByARealCheck is the regression test of a
// bridge route with a tcp check: an upstream that accepts TCP and fails
// every TLS handshake (a black hole, an expired certificate) stayed up
// through 150 failures, because the check only connected. Once traffic
// has marked it down, the check of a pool that uses TLS is a tls check,
// so the black hole stays down and a recovered upstream comes back after
// Rise passes (then the check is tcp again); a splice pool, which has no
// TLS to check, comes back by its tcp check.
func TestPassiveDownComesBackOnlyByARealCheck(t *testing.T) {
	pki := newPKI(t)
	bridgeTLS := func() *tls.Config { return pki.clientConfig(&pki.client) }
	tests := []struct {
		name    string
		addr    func(t *testing.T) string
		tls     func() *tls.Config
		healthy bool
	}{
		{name: "bridge: black hole stays down", addr: func(t *testing.T) string { return listenSilent(t, "127.0.0.1:0") }, tls: bridgeTLS, healthy: false},
		{name: "bridge: recovered upstream comes back", addr: func(t *testing.T) string {
			return startUpstream(t, serverConfig(pki.server, pki.ca.pool, 0)).addr
		}, tls: bridgeTLS, healthy: true},
		{name: "splice: tcp check brings it back", addr: func(t *testing.T) string { return listenSilent(t, "127.0.0.1:0") }, healthy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const fall, rise = 3, 2
			addr := tt.addr(t)
			p := mustPool(t, Config{
				Addrs:         []string{addr},
				Check:         Check{Kind: CheckTCP, Fall: fall, Rise: rise, Timeout: 300 * time.Millisecond},
				TLSConfigFunc: tt.tls,
			})
			h := p.host(addr)
			for range fall {
				p.ReportDial(h, errBlackHole)
			}
			if h.Healthy() {
				t.Fatal("not marked down by fall failed dials")
			}
			rounds(p, rise)
			if h.Healthy() != tt.healthy {
				t.Fatalf("healthy %v after %d checks, want %v (last error %q)", h.Healthy(), rise, tt.healthy, p.Status()[0].LastError)
			}
			if tt.healthy && p.checkKind(h) != CheckTCP {
				t.Errorf("check kind %q once up again, want tcp", p.checkKind(h))
			}
		})
	}
}

// TestReportDialRetiredHost: a host a reload retired is no pool's to
// judge; a report about it changes nothing.
func TestReportDialRetiredHost(t *testing.T) {
	old := mustPool(t, Config{Addrs: []string{"192.0.2.1:443"}, Check: Check{Fall: 1}})
	h := old.host("192.0.2.1:443")
	mustPool(t, Config{Addrs: []string{"192.0.2.9:443"}}).Adopt(old)
	old.ReportDial(h, errBlackHole)
	if !h.Healthy() {
		t.Error("a retired host was marked down")
	}
}
