package sni

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"
)

// echoUpstream reads the replayed ClientHello, says "+", then echoes
// until EOF.
func echoUpstream(tb testing.TB) *tcpUpstream {
	return newTCPUpstream(tb, func(c *net.TCPConn) {
		if _, err := readHelloThen(c); err != nil {
			return
		}
		c.Write([]byte("+"))
		io.Copy(c, c)
	})
}

// openTunnel opens a splice tunnel through w with hello and checks one
// echo through it.
func openTunnel(tb testing.TB, w *world, hello []byte) *net.TCPConn {
	tb.Helper()
	c := w.dial(tb)
	c.Write(hello)
	if got := string(readAtMost(tb, c, 1)); got != "+" {
		tb.Fatalf("tunnel: got %q from the upstream, want its greeting", got)
	}
	echo(tb, c, "x")
	return c
}

func echo(tb testing.TB, c net.Conn, msg string) {
	tb.Helper()
	c.Write([]byte(msg))
	if got := string(readAtMost(tb, c, len(msg))); got != msg {
		tb.Fatalf("echo %q, got %q", msg, got)
	}
}

// TestSetConfigAllowAppliesToNewConnections: a reload that changes
// listen.allow applies to the next connection.
func TestSetConfigAllowAppliesToNewConnections(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	// Each refusal is logged (no rate limit): the test reads the lines.
	w := newWorld(t, Config{Allow: prefixes("10.0.0.0/8"), WarnInterval: time.Nanosecond}, "", registryRoute(t, echoUpstream(t).addr))
	c := w.dial(t)
	c.Write(hello)
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("client outside listen.allow got %q", got)
	}
	w.logs.wait(t, "msg=connection", "client="+c.LocalAddr().String(), "result=denied")

	if err := w.srv.SetConfig(Config{Allow: prefixes("10.0.0.0/8", "127.0.0.0/8"), WarnInterval: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	open := openTunnel(t, w, hello)

	if err := w.srv.SetConfig(Config{Allow: prefixes("10.0.0.0/8"), WarnInterval: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	c = w.dial(t)
	c.Write(hello)
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("client removed from listen.allow got %q", got)
	}
	w.logs.wait(t, "msg=connection", "client="+c.LocalAddr().String(), "result=denied")
	echo(t, open, "still open") // an established tunnel is not cut by a reload
}

// TestSetConfigKeepsEachConnectionsSettings: a connection keeps the
// settings it was accepted with; new ones get the new settings.
func TestSetConfigKeepsEachConnectionsSettings(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	w := newWorld(t, Config{IdleTimeout: time.Hour}, "", registryRoute(t, echoUpstream(t).addr))
	old := openTunnel(t, w, hello) // idle timeout: 1h

	if err := w.srv.SetConfig(Config{IdleTimeout: 50 * time.Millisecond, MaxConnections: 2}); err != nil {
		t.Fatal(err)
	}
	// idle timeout: 50ms; 2 of 2 connections. No echo through it: under
	// load 50ms can pass between two bytes of an echo, and the tunnel
	// closing mid-echo failed the test although the timeout was right.
	short := w.dial(t)
	short.Write(hello)
	w.logs.wait(t, "msg=connection", "client="+short.LocalAddr().String(), "result=idle_timeout")
	// old has been idle longer than the new timeout and is still served.
	echo(t, old, "old settings")

	if got := w.srv.Config(); got.IdleTimeout != 50*time.Millisecond || got.ClientHelloTimeout != DefaultClientHelloTimeout {
		t.Errorf("Config() = idle %v, client hello %v; want the new idle timeout and defaults", got.IdleTimeout, got.ClientHelloTimeout)
	}
	if err := w.srv.SetConfig(Config{ConnectTimeout: -1}); err == nil {
		t.Error("SetConfig accepted a negative connect timeout")
	}
	if got := w.srv.Config().IdleTimeout; got != 50*time.Millisecond {
		t.Errorf("a rejected SetConfig changed the settings: idle %v", got)
	}
}

// TestSetConfigMaxConnections: lowering max_connections refuses new
// connections beyond it and keeps the open ones.
func TestSetConfigMaxConnections(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	w := newWorld(t, Config{}, "", registryRoute(t, echoUpstream(t).addr))
	open := openTunnel(t, w, hello)
	if err := w.srv.SetConfig(Config{MaxConnections: 1}); err != nil {
		t.Fatal(err)
	}
	c := w.dial(t)
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("connection beyond max_connections got %q", got)
	}
	w.logs.wait(t, "msg=connection", "client="+c.LocalAddr().String(), "result=limit")
	echo(t, open, "kept")
}
