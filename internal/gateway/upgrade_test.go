package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/handover"
)

// envUpgradeChild makes this test binary, started by an upgrade, run a
// gateway on the configuration file it names, as `snigate run -c FILE`
// does (see TestMain).
const envUpgradeChild = "GATEWAY_TEST_UPGRADE_CONFIG"

// upgradeChildMain is the new process of an upgrade: New and Run on file.
func upgradeChildMain(file string) int {
	logger, err := NewLogger(os.Stderr, "text", "warn")
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade child:", err)
		return 1
	}
	g, err := New(Options{ConfigFile: file, Logger: logger})
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade child:", err)
		return 1
	}
	if err := g.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "upgrade child:", err)
		return 1
	}
	return 0
}

// upgradeConfig: a splice route, a bridge route, a CONNECT listener, the
// DNS responder and the admin API; %[1]q: the splice upstream, %[2]q: the
// bridge's (mTLS) upstream.
const upgradeConfig = `listen:
  tls: ["127.0.0.1:0"]
  connect: "127.0.0.1:0"
  dns: "127.0.0.1:0"
  admin: "127.0.0.1:0"
timeouts:
  client_hello: 300ms
  drain: 10s
dns:
  answer: ["127.0.0.1"]
routes:
  - name: splice
    sni: ["splice.test"]
    mode: splice
    upstreams: [%[1]q]
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%[2]q]
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
`

// waitLimit bounds what a test waits for that should come at once.
const waitLimit = 10 * time.Second

// Regression: a failed SIGUSR2 upgrade (a new binary that exits, or one
// that rejects the configuration file) left the old process unable to
// serve while its log said it kept serving: os.StartProcess's Fd() on the
// listeners' File() duplicates cleared O_NONBLOCK on the open file
// descriptions they share with the listeners, the event loops' accept4
// then blocked in a RawSyscall that kept its P, and every other goroutine
// (admin, CONNECT, signals) starved: no handshake, no /healthz, SIGTERM
// ignored. After a failed upgrade every listener is still non-blocking, a
// splice and a bridge handshake succeed, /healthz answers, a CONNECT head
// that never ends is closed at timeouts.client_hello, and SIGTERM stops
// the gateway.
func TestFailedUpgradeKeepsServing(t *testing.T) {
	tests := []struct {
		name string
		// startPath is what os.Args[0] names (the path the gateway was
		// started as, which an upgrade starts); set before the gateway
		// runs, so that its goroutines see it.
		startPath func(t *testing.T) string
		// prepare makes the upgrade fail, with the gateway running.
		prepare func(t *testing.T, w *world)
	}{
		{name: "the new binary exits 2", startPath: func(t *testing.T) string {
			script := filepath.Join(t.TempDir(), "snigate")
			if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 2\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return script
		}},
		{name: "the new process rejects the configuration file", startPath: testBinary, prepare: func(t *testing.T, w *world) {
			t.Setenv(envUpgradeChild, w.file) // this test binary runs as a gateway (TestMain)
			w.writeConfig("listen: {tls: [\"127.0.0.1:0\"]}\nroutes: [{name: x, mode: nonsense}]\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setStartPath(t, tt.startPath(t))
			w := newUpgradeWorld(t)
			if tt.prepare != nil {
				tt.prepare(t, w)
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
				t.Fatal(err)
			}
			w.logs.Wait(t, `msg="upgrade failed; this process keeps serving"`)
			wantListenersNonblocking(t, w)
			w.wantServes()
			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-w.done:
				if w.runErr != nil {
					t.Errorf("Run = %v after SIGTERM, want nil", w.runErr)
				}
			case <-time.After(waitLimit): // a bound on failure, not a wait
				t.Fatalf("SIGTERM after a failed upgrade: Run has not returned within %s", waitLimit)
			}
		})
	}
}

// newUpgradeWorld starts a gateway on upgradeConfig, with real signals.
func newUpgradeWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t, "")
	splice := startEcho(t, w.leaf("splice.test"), nil)
	bridge := startEcho(t, w.leaf("registry.test"), w.ca.Pool())
	if _, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test"); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(upgradeConfig, splice.addr(), bridge.addr()))
	w.start()
	w.wantServes() // as before any upgrade
	return w
}

// setStartPath makes os.Args[0], the path an upgrade starts, path. Call
// it before the gateway starts (its goroutines read os.Args[0]); it is
// restored after the gateway stopped.
func setStartPath(t *testing.T, path string) {
	old := os.Args[0]
	os.Args[0] = path
	t.Cleanup(func() { os.Args[0] = old })
}

// testBinary is this test binary's path.
func testBinary(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// wantListenersNonblocking reads every listening socket's file status
// flags (fcntl F_GETFL, as /proc/self/fdinfo shows them).
func wantListenersNonblocking(t *testing.T, w *world) {
	t.Helper()
	w.g.reloadMu.Lock()
	socks := w.g.ls.all()
	w.g.reloadMu.Unlock()
	if len(socks) != 5 {
		t.Fatalf("%d listening sockets, want 5 (tls, connect, dns udp and tcp, admin)", len(socks))
	}
	for _, n := range socks {
		nb, err := handover.Nonblocking(n.conn.(syscall.Conn))
		if err != nil {
			t.Fatalf("%s: %v", n.name(), err)
		}
		if !nb {
			t.Fatalf("%s: O_NONBLOCK cleared after the failed upgrade: the event loops' accept4 blocks", n.name())
		}
	}
}

// wantServes checks a splice and a bridge handshake (each with an echo),
// /healthz, and that a CONNECT head that never ends is closed at
// timeouts.client_hello (with its log line, when this world's gateway
// serves: not after an upgrade).
func (w *world) wantServes() {
	t := w.t
	t.Helper()
	for _, sni := range []string{"splice.test", "registry.test"} {
		c, err := w.dialTLS(sni)
		if err != nil {
			t.Fatalf("handshake for %s: %v", sni, err)
		}
		c.SetDeadline(time.Now().Add(waitLimit)) // a bound on failure, not a wait
		echoRoundTrip(t, c, "through "+sni)
		c.Close()
	}
	client := &http.Client{Timeout: waitLimit}
	resp, err := client.Get("http://" + w.addrs.Admin.String() + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d, want 200", resp.StatusCode)
	}
	w.wantSlowConnectHeadClosed()
}

// wantSlowConnectHeadClosed sends a CONNECT head without its end and
// expects the gateway to close the connection, no earlier than
// timeouts.client_hello.
func (w *world) wantSlowConnectHeadClosed() {
	t := w.t
	t.Helper()
	budget := w.g.gen.Load().cfg.Timeouts.ClientHello
	timeouts := strings.Count(w.logs.String(), "result=timeout")
	start := time.Now()
	c, err := net.Dial("tcp", w.addrs.Connect.String())
	if err != nil {
		t.Fatalf("dial the CONNECT listener: %v", err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "CONNECT registry.test:443 HTTP/1.1\r\nHost: registry.test:443\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(waitLimit)) // a bound on failure, not a wait
	_, err = io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a CONNECT head that never ends is still open after %s (timeouts.client_hello %s)", waitLimit, budget)
	}
	if took := time.Since(start); took < budget {
		t.Fatalf("the unfinished CONNECT head was closed after %s, before timeouts.client_hello (%s)", took, budget)
	}
	if w.upgraded {
		return
	}
	w.logs.WaitFor(t, func(text string) bool { return strings.Count(text, "result=timeout") > timeouts },
		func(text string) string { return "no new result=timeout log line for the CONNECT head; log:\n" + text })
}

// TestUpgradeHandsOverNonblockingSockets: a successful upgrade, to this
// test binary run as a gateway on the same file, still works with the
// hand-over's duplicates (handover.DupSocket): the old process drains and
// returns, the new one serves a splice and a bridge handshake and /healthz
// on the same sockets, which are still non-blocking, and stops on SIGTERM.
func TestUpgradeHandsOverNonblockingSockets(t *testing.T) {
	setStartPath(t, testBinary(t))
	w := newUpgradeWorld(t)
	w.g.reloadMu.Lock()
	tlsLn := w.g.ls.tls[0].(syscall.Conn)
	w.g.reloadMu.Unlock()
	shared, err := handover.DupSocket(tlsLn) // outlives the old process's listener
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	t.Setenv(envUpgradeChild, w.file)
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
	case <-time.After(DefaultUpgradeTimeout + waitLimit): // a bound on failure, not a wait
		t.Fatalf("the old process has not given way")
	}
	pid := newProcessPid(t, w.logs.String())
	child, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { _, err := child.Wait(); exited <- err }()
	t.Cleanup(func() {
		child.Kill()
		<-exited
	})
	w.upgraded = true
	if w.runErr != nil {
		t.Errorf("the old process's Run = %v, want nil after the upgrade", w.runErr)
	}
	w.wantServes()
	if nb, err := handover.Nonblocking(shared); err != nil || !nb {
		t.Errorf("the TLS socket after the upgrade: non-blocking %v, %v; want true", nb, err)
	}
	if err := child.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the new process after SIGTERM: %v", err)
		}
		exited <- nil // for the cleanup
	case <-time.After(waitLimit): // a bound on failure, not a wait
		t.Fatalf("the new process (pid %d) has not exited on SIGTERM", pid)
	}
}

// newProcessPid is the pid the old process's log gives the new one.
func newProcessPid(t *testing.T, logs string) int {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `msg="upgrade: the new process serves`) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "pid="); ok {
				if pid, err := strconv.Atoi(v); err == nil {
					return pid
				}
			}
		}
	}
	t.Fatalf("no log line names the new process's pid:\n%s", logs)
	return 0
}
