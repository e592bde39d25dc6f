package sni

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// parkingWorld is a world whose spliced directions run in goroutines (as
// when the event loop cannot take a connection: a configured DialContext,
// a host-name upstream) and park after 20ms without bytes; parked
// receives the parker's count after each change.
func parkingWorld(t *testing.T, cfg Config, up *tcpUpstream) (w *world, parked <-chan int) {
	t.Helper()
	w = newWorldWith(t, func(s *Server) { s.loopOff = true }, cfg, "", spliceRoute(t, "registry", []string{"registry.example.com"}, up.addr))
	ch := make(chan int, 1<<16)
	w.srv.parkAfter.Store(int64(20 * time.Millisecond))
	w.srv.parker.mu.Lock()
	w.srv.parker.notify = ch
	w.srv.parker.mu.Unlock()
	return w, ch
}

// waitParked waits until the parker holds n directions.
func waitParked(t *testing.T, parked <-chan int, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-parked:
			if got == n {
				return
			}
		case <-timeout:
			t.Fatalf("the parker never held %d directions", n)
		}
	}
}

// readyEchoUpstream reads the ClientHello, says "ready", then echoes.
func readyEchoUpstream(t *testing.T) *tcpUpstream {
	return newTCPUpstream(t, func(c *net.TCPConn) {
		readHelloThen(c)
		c.Write([]byte("ready"))
		io.Copy(c, c)
		c.CloseWrite()
	})
}

// openReady opens a tunnel and reads the upstream's "ready".
func openReady(t *testing.T, w *world) *net.TCPConn {
	t.Helper()
	c := w.dial(t)
	c.Write(captureHello(t, &tls.Config{ServerName: "registry.example.com"}))
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ready" {
		t.Fatalf("tunnel: %q %v", b, err)
	}
	return c
}

func TestSpliceParkedTunnelWakes(t *testing.T) {
	w, parked := parkingWorld(t, Config{}, readyEchoUpstream(t))
	c := openReady(t, w)
	waitParked(t, parked, 2)

	// Small message: both directions wake (the upstream's echo wakes the
	// downstream one).
	c.Write([]byte("ping"))
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
		t.Fatalf("echo after parking: %q %v", b, err)
	}
	waitParked(t, parked, 2) // idle again: both parked again

	// 8 MiB both ways at once after waking.
	const size = 8 << 20
	sent := sha256.New()
	go func() {
		io.Copy(c, io.TeeReader(io.LimitReader(randStream(3), size), sent))
		c.CloseWrite()
	}()
	got := sha256.New()
	n, err := io.Copy(got, c)
	if err != nil || n != size {
		t.Fatalf("echoed %d bytes, err %v; want %d", n, err, size)
	}
	if !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
		t.Fatal("echoed bytes differ")
	}
	line := w.logs.wait(t, "msg=connection", "result=ok")
	if want := "bytes_down=8388617 "; !strings.Contains(line, want) { // ready + ping + 8 MiB
		t.Errorf("log line %q: want %s", line, want)
	}
}

func TestSpliceIdleTimeoutWhileParked(t *testing.T) {
	const idle = 300 * time.Millisecond
	w, parked := parkingWorld(t, Config{IdleTimeout: idle}, readyEchoUpstream(t))
	start := time.Now()
	c := openReady(t, w)
	waitParked(t, parked, 2)
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("got %q", got)
	}
	if d := time.Since(start); d < idle {
		t.Errorf("closed after %v, before the idle timeout %v", d, idle)
	}
	w.logs.wait(t, "msg=connection", "result=idle_timeout")
}

func TestSpliceShutdownClosesParkedTunnels(t *testing.T) {
	w, parked := parkingWorld(t, Config{}, readyEchoUpstream(t))
	c := openReady(t, w)
	waitParked(t, parked, 2)
	ctx := shutdownCtx(t, 0)
	if err := w.srv.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown returned nil while a parked tunnel was open")
	}
	readAll(t, c)
	w.logs.wait(t, "msg=connection", "result=shutdown")
}

// TestSpliceParkedTunnelsHoldNoGoroutine: idle tunnels cost the gateway no
// goroutine once parked (Go's splice proxy: two per tunnel).
func TestSpliceParkedTunnelsHoldNoGoroutine(t *testing.T) {
	const tunnels = 100
	w, parked := parkingWorld(t, Config{}, readyEchoUpstream(t))
	openReady(t, w) // warm up: starts the parker
	waitParked(t, parked, 2)
	before := runtime.NumGoroutine()
	for range tunnels {
		openReady(t, w)
	}
	waitParked(t, parked, 2*tunnels+2)
	// The test's echo upstream holds one goroutine per tunnel.
	perTunnel := float64(runtime.NumGoroutine()-before-tunnels) / tunnels
	if perTunnel > 0.05 {
		t.Fatalf("%d parked tunnels hold %.2f gateway goroutines each, want 0", tunnels, perTunnel)
	}
}
