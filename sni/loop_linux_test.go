package sni

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLoopTunnelsHoldNoGoroutine: a tunnel the event loop runs costs the
// gateway no goroutine at any time, not even before it goes idle (the
// goroutine path: two per tunnel until they park).
func TestLoopTunnelsHoldNoGoroutine(t *testing.T) {
	const tunnels = 100
	w := newWorld(t, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, readyEchoUpstream(t).addr))
	openReady(t, w) // warm up: starts the loops
	before := runtime.NumGoroutine()
	for range tunnels {
		openReady(t, w)
	}
	// The test's echo upstream holds one goroutine per tunnel.
	perTunnel := float64(runtime.NumGoroutine()-before-tunnels) / tunnels
	if perTunnel > 0.05 {
		t.Fatalf("%d open tunnels hold %.2f gateway goroutines each, want 0", tunnels, perTunnel)
	}
	if n := w.srv.Handshaking(); n != 0 {
		t.Errorf("Handshaking = %d with every connection in its tunnel, want 0", n)
	}
}

// TestLoopShutdownClosesIdleTunnels: Shutdown's deadline closes the loop's
// tunnels with result shutdown.
func TestLoopShutdownClosesIdleTunnels(t *testing.T) {
	w := newWorld(t, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, readyEchoUpstream(t).addr))
	c := openReady(t, w)
	if err := w.srv.Shutdown(shutdownCtx(t, 0)); err == nil {
		t.Fatal("Shutdown returned nil while a tunnel was open")
	}
	readAll(t, c)
	w.logs.wait(t, "msg=connection", "result=shutdown")
}

// TestLoopSocketsNoDelay: both sockets of a loop tunnel have TCP_NODELAY,
// as net gives every TCP connection (the client's is inherited from the
// listening socket, set once).
func TestLoopSocketsNoDelay(t *testing.T) {
	w := newWorld(t, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, readyEchoUpstream(t).addr))
	openReady(t, w)
	w.srv.mu.Lock()
	var c *lconn
	for ss := range w.srv.sessions {
		c, _ = ss.conn.(*lconn)
	}
	w.srv.mu.Unlock()
	if c == nil {
		t.Fatal("the tunnel is not the event loop's")
	}
	for name, fd := range map[string]int{"client": c.cfd, "upstream": c.ufd} {
		v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		if err != nil || v == 0 {
			t.Errorf("%s socket: TCP_NODELAY %d, %v; want 1", name, v, err)
		}
	}
}
