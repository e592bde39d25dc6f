package gateway

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// notifySocket is a NOTIFY_SOCKET for one test: what the gateway tells
// systemd arrives on it, one datagram per message.
func notifySocket(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return c
}

// nextNotify reads the next message, failing after 10s without one.
func nextNotify(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no sd_notify message: %v", err)
	}
	return string(buf[:n])
}

// TestNotifiesSystemd: READY=1 once the listeners serve, RELOADING=1 with
// MONOTONIC_USEC then READY=1 around a reload (what Type=notify-reload
// waits for), STOPPING=1 when the drain begins.
func TestNotifiesSystemd(t *testing.T) {
	c := notifySocket(t)
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	w.writeConfig(listenConfig("127.0.0.1:0", "", spliceRoute("a", "a.test", a.addr())))
	w.start()
	if m := nextNotify(t, c); !strings.HasPrefix(m, "READY=1\nSTATUS=serving 1 route") || strings.HasPrefix(m, "READY=1\nSTATUS=serving 1 routes") {
		t.Fatalf("at start: %q, want READY=1 and a STATUS", m)
	}
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	if m := nextNotify(t, c); !strings.HasPrefix(m, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Fatalf("reload begins: %q, want RELOADING=1 with MONOTONIC_USEC", m)
	}
	if m := nextNotify(t, c); !strings.HasPrefix(m, "READY=1\n") {
		t.Fatalf("reload ends: %q, want READY=1", m)
	}
	w.stop()
	if m := nextNotify(t, c); m != "STOPPING=1\n" {
		t.Fatalf("stop: %q, want STOPPING=1", m)
	}
}
