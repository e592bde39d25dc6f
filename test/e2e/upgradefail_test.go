package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
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
)

// Ports of the failed-upgrade test's gateway, beside the others'.
const (
	failTLSPort     = 10443
	failConnectPort = 13128
	failAdminAddr   = "127.0.0.1:9093"
	failDNSAddr     = ":5355"
	// failClientHello is its timeouts.client_hello: a CONNECT head that
	// never ends is closed after it.
	failClientHello = 2 * time.Second
)

// TestFailedUpgradeKeepsServing: a SIGUSR2 upgrade that fails (the
// installed binary replaced by one that exits 2; then the real binary
// back, with a configuration file it rejects) leaves the gateway serving:
// every socket it holds is still non-blocking (/proc/PID/fdinfo), a bridge
// and a splice handshake succeed, /healthz answers, a CONNECT head that
// never ends is closed at timeouts.client_hello, and SIGTERM stops it. A
// failed hand-over once left the listening sockets blocking: the event
// loops' accept4 then held every P, and none of this worked.
func TestFailedUpgradeKeepsServing(t *testing.T) {
	w := getWorld(t)
	dir := t.TempDir()
	installed := filepath.Join(dir, "bin", "snigate")
	installFile(t, w.gw.bin, installed)
	cfg := filepath.Join(dir, "snigate.yaml")
	writeConfigFile(t, cfg, w.failUpgradeConfig(t))
	p := w.startAndWaitReady(t, "snigate-failupgrade", filepath.Join(w.logs, "snigate-failupgrade.log"), failAdminAddr,
		w.bastion.command(installed, "run", "-c", cfg, "--log-format", "json"))
	t.Cleanup(func() { _ = p.stop() })
	w.wantFailServes(t, "before any upgrade")

	steps := []struct {
		name    string
		prepare func(t *testing.T)
	}{
		{name: "a new binary that exits 2", prepare: func(t *testing.T) {
			script := filepath.Join(dir, "exit2")
			if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 2\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(script, installed); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a configuration file the new process rejects", prepare: func(t *testing.T) {
			installFile(t, w.gw.bin, installed)
			writeConfigFile(t, cfg, "listen: {tls: [\":443\"]}\nroutes: [{name: x, mode: nonsense}]\n")
		}},
	}
	for i, step := range steps {
		step.prepare(t)
		if err := p.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		waitUpgradeFailed(t, p, i+1)
		wantSocketsNonblocking(t, p.cmd.Process.Pid)
		w.wantFailServes(t, "after "+step.name)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExited(t, p, "the gateway on SIGTERM after two failed upgrades")
}

// failUpgradeConfig is upgradeConfig on this test's ports, with a CONNECT
// listener and a short timeouts.client_hello.
func (w *world) failUpgradeConfig(t *testing.T) string {
	t.Helper()
	y := w.upgradeConfig(t, failTLSPort, failAdminAddr, failDNSAddr)
	admin := fmt.Sprintf("  admin: %q\n", failAdminAddr)
	if !strings.Contains(y, admin) || !strings.Contains(y, "timeouts:\n") {
		t.Fatalf("the upgrade configuration has no %q or timeouts: line:\n%s", admin, y)
	}
	y = strings.Replace(y, admin, admin+fmt.Sprintf("  connect: \":%d\"\n", failConnectPort), 1)
	return strings.Replace(y, "timeouts:\n", fmt.Sprintf("timeouts:\n  client_hello: %s\n", failClientHello), 1)
}

// installFile copies the file at from to path (mode 0755), replacing what
// is there in one rename.
func installFile(t *testing.T, from, path string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func writeConfigFile(t *testing.T, path, content string) {
	t.Helper()
	if err := writeFileAtomic(path, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

// waitUpgradeFailed waits for the n-th "upgrade failed" line in p's log.
func waitUpgradeFailed(t *testing.T, p *proc, n int) {
	t.Helper()
	err := poll(startTries, pollStep, func() error {
		if !p.running() {
			return fmt.Errorf("%w: the gateway exited: %v", errGaveUp, p.err)
		}
		if got := countLogMsg(p.logPath, "upgrade failed; this process keeps serving"); got < n {
			return fmt.Errorf("%d failed upgrades logged, want %d", got, n)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("failed upgrade %d: %v\n%s", n, err, p.tail(30))
	}
}

func countLogMsg(path, msg string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct{ Msg string }
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Msg == msg {
			n++
		}
	}
	return n
}

// wantSocketsNonblocking reads the file status flags of every socket pid
// holds from /proc/PID/fdinfo: each must have O_NONBLOCK (the listeners,
// the event loops' duplicates, the connections).
func wantSocketsNonblocking(t *testing.T, pid int) {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	sockets := 0
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:") {
			continue
		}
		flags, err := fdFlags(pid, fd.Name())
		if err != nil {
			continue // closed since
		}
		sockets++
		if flags&syscall.O_NONBLOCK == 0 {
			t.Errorf("descriptor %s (%s) of process %d: flags %#o, O_NONBLOCK cleared", fd.Name(), link, pid, flags)
		}
	}
	if sockets < 5 {
		t.Fatalf("process %d holds %d sockets, want the five listeners at least", pid, sockets)
	}
}

// fdFlags is the "flags:" line of /proc/PID/fdinfo/FD (octal).
func fdFlags(pid int, fd string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			f, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			return int(f), err
		}
	}
	return 0, errors.New("no flags line")
}

// wantFailServes checks the failed-upgrade gateway from the node: a bridge
// GET, a splice handshake, /healthz, and a CONNECT head that never ends
// closed at timeouts.client_hello.
func (w *world) wantFailServes(t *testing.T, when string) {
	t.Helper()
	addr := fmt.Sprintf("%s:%d", bastionAddr, failTLSPort)
	if err := getOnNewConn(w, addr, w.gatewayTLS(t, registryHost)); err != nil {
		t.Fatalf("%s: bridge: %v", when, err)
	}
	roots, err := certPool(w.mirrorCA.file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tlsDialIn(w.node, addr, &tls.Config{ServerName: mirrorHost, RootCAs: roots})
	if err != nil {
		t.Fatalf("%s: splice handshake: %v", when, err)
	}
	c.Close()
	if status, body, err := httpGetIn(w.bastion, failAdminAddr, "/healthz"); err != nil || status != http.StatusOK {
		t.Fatalf("%s: /healthz: %d %s %v", when, status, body, err)
	}
	w.wantSlowConnectClosed(t, when)
}

// wantSlowConnectClosed sends a CONNECT head without its end from the
// node and expects the gateway to close it, no earlier than
// timeouts.client_hello.
func (w *world) wantSlowConnectClosed(t *testing.T, when string) {
	t.Helper()
	start := time.Now()
	var c net.Conn
	err := w.node.do(func() (err error) {
		c, err = net.DialTimeout("tcp", fmt.Sprintf("%s:%d", bastionAddr, failConnectPort), 5*time.Second)
		return err
	})
	if err != nil {
		t.Fatalf("%s: dial the CONNECT listener: %v", when, err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "CONNECT "+registryHost+":443 HTTP/1.1\r\nHost: "+registryHost+":443\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(cmdTimeout)) // a bound on failure, not a wait
	_, err = io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: a CONNECT head that never ends is still open after %s", when, cmdTimeout)
	}
	if took := time.Since(start); took < failClientHello {
		t.Fatalf("%s: the unfinished CONNECT head was closed after %s, before timeouts.client_hello (%s)", when, took, failClientHello)
	}
}
