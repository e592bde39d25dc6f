package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Ports of the socket-activated gateway, beside the world's and the
// upgrade test's.
const (
	activatedTLSPort   = 9443
	activatedAdminAddr = "127.0.0.1:9092"
	activatedDNSAddr   = ":5354"
)

// TestSocketActivationThenUpgrade runs snigate as systemd would with
// snigate.socket (systemd-socket-activate passes LISTEN_FDS, LISTEN_PID and
// LISTEN_FDNAMES): it serves on the sockets it was given, opens the one
// it was not (DNS), and an upgrade hands the systemd sockets on.
func TestSocketActivationThenUpgrade(t *testing.T) {
	w := getWorld(t)
	tool, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Skip("systemd-socket-activate (Debian package systemd) not found")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "snigate.yaml")
	if err := os.WriteFile(cfg, []byte(w.upgradeConfig(t, activatedTLSPort, activatedAdminAddr, activatedDNSAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(w.logs, "snigate-activated.log")
	// It execs snigate at the first connection: the readiness poll's.
	p := w.startAndWaitReady(t, "snigate-activated", logPath, activatedAdminAddr, w.bastion.command(tool,
		"-l", fmt.Sprint(activatedTLSPort), "-l", activatedAdminAddr, "--fdname=tls:admin",
		w.gw.bin, "run", "-c", cfg, "--log-format", "json"))
	t.Cleanup(func() { _ = p.stop() })
	wantInherited(t, logPath, "systemd", "listen.tls", "listen.admin")
	addr := fmt.Sprintf("%s:%d", bastionAddr, activatedTLSPort)
	if err := getOnNewConn(w, addr, w.gatewayTLS(t, registryHost)); err != nil {
		t.Fatalf("through the socket from systemd: %v", err)
	}

	if err := p.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	newPid := waitUpgraded(t, p)
	t.Cleanup(func() { stopPid(t, newPid) })
	wantInherited(t, logPath, "handover", "listen.tls", "listen.admin", "listen.dns")
	if err := getOnNewConn(w, addr, w.gatewayTLS(t, registryHost)); err != nil {
		t.Fatalf("after the upgrade of a socket-activated gateway: %v", err)
	}
	waitExited(t, p, "the socket-activated process after the upgrade")
	if status, body, err := httpGetIn(w.bastion, activatedAdminAddr, "/readyz"); err != nil || status != http.StatusOK {
		t.Fatalf("/readyz of the new process: %d %s %v", status, body, err)
	}
}

// wantInherited checks that the log says each key's socket was inherited
// from source.
func wantInherited(t *testing.T, logPath, source string, keys ...string) {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct{ Msg, Key, From string }
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Msg == "listening socket inherited" && e.From == source {
			seen[e.Key] = true
		}
	}
	for _, k := range keys {
		if !seen[k] {
			t.Errorf("no log line says the %s socket was inherited from %s (%s)", k, source, logPath)
		}
	}
}
