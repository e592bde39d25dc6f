package sni

import (
	"runtime"
	"testing"
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
