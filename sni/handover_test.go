package sni

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestStopAcceptingLetsHandshakesFinish: after StopAccepting (the old
// process of an upgrade) the listener is closed, and a connection still
// sending its ClientHello gets its tunnel; Shutdown would have cut it
// (result=shutdown), which refused a pull in the upgrade's e2e test.
func TestStopAcceptingLetsHandshakesFinish(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr))
	waiting := w.dial(t) // accepted, no ClientHello yet
	w.waitSessions(t, 1)
	if n := w.srv.Handshaking(); n != 1 {
		t.Fatalf("Handshaking = %d with one connection before its ClientHello, want 1", n)
	}
	w.srv.StopAccepting()
	<-w.served
	if !errors.Is(w.serveErr, ErrServerClosed) {
		t.Errorf("Serve after StopAccepting = %v, want ErrServerClosed", w.serveErr)
	}
	if _, err := net.Dial("tcp", w.addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after StopAccepting: %v, want connection refused", err)
	}
	waiting.Write(hello)
	if got := string(readAtMost(t, waiting, 2)); got != "ok" {
		t.Fatalf("the connection accepted before StopAccepting got %q, want its tunnel", got)
	}
	if n := w.srv.Handshaking(); n != 0 {
		t.Errorf("Handshaking = %d once the only connection is in its tunnel, want 0", n)
	}
}
