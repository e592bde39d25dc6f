package sni

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/upstream"
)

// engines are the two byte engines a splice connection runs on: the
// event loop (the default for a TLS listener from Listen on a server that
// dials itself) and the goroutine path (Server.loopOff).
var engines = []struct {
	name  string
	setup func(*Server)
	loop  bool
}{
	{name: "loop", loop: true},
	{name: "goroutines", setup: func(s *Server) { s.loopOff = true }},
}

// engineCase is one behaviour both engines must show alike; newWorld
// builds the case's world on the engine under test.
type engineCase struct {
	name string
	run  func(t *testing.T, newWorld func(Config, ...*Route) *world)
}

// TestEnginesBehaveAlike runs each splice behaviour on both engines:
// the same bytes, results, log lines and metrics.
func TestEnginesBehaveAlike(t *testing.T) {
	cases := []engineCase{
		{name: "splice 4 MiB each way", run: engineSplice},
		{name: "half-close", run: engineHalfClose},
		{name: "idle timeout", run: engineIdle},
		{name: "slow reader", run: engineSlowReader},
		{name: "shutdown closes tunnels", run: engineShutdownTunnel},
		{name: "shutdown cuts a pending ClientHello", run: engineShutdownHello},
		{name: "passive health", run: enginePassiveHealth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, e := range engines {
				t.Run(e.name, func(t *testing.T) {
					var w *world
					tc.run(t, func(cfg Config, routes ...*Route) *world {
						w = newWorldWith(t, e.setup, cfg, "", routes...)
						return w
					})
					checkEngine(t, w, e.loop)
				})
			}
		})
	}
}

// checkEngine fails the test unless w's listener ran on the engine named.
func checkEngine(t *testing.T, w *world, loop bool) {
	t.Helper()
	w.srv.mu.Lock()
	defer w.srv.mu.Unlock()
	for ln := range w.srv.listeners {
		if _, isLoop := ln.(*loopListener); isLoop != loop {
			t.Errorf("listener served by the event loop: %v, want %v", isLoop, loop)
		}
	}
}

func engineSplice(t *testing.T, newWorld func(Config, ...*Route) *world) {
	const size = 4 << 20
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	upSum := make(chan [32]byte, 1)
	up := newTCPUpstream(t, func(c *net.TCPConn) {
		raw, _ := readHelloThen(c) // the hello, and what followed it in the same reads
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			io.CopyN(c, randStream(2), size)
			c.CloseWrite()
		}()
		h := sha256.New()
		h.Write(raw[min(len(hello), len(raw)):])
		io.Copy(h, c)
		upSum <- [32]byte(h.Sum(nil))
		<-sent
	})
	w := newWorld(Config{}, registryRoute(t, up.addr))
	c := w.dial(t)
	go func() {
		c.Write(hello)
		io.CopyN(c, randStream(1), size)
		c.CloseWrite()
	}()
	got := sha256.New()
	if n, err := io.Copy(got, c); err != nil || n != size {
		t.Fatalf("client received %d bytes, %v; want %d", n, err, size)
	}
	if !bytes.Equal(got.Sum(nil), sum(randStream(2), size)) {
		t.Error("downstream bytes differ")
	}
	if s := <-upSum; !bytes.Equal(s[:], sum(randStream(1), size)) {
		t.Error("upstream bytes differ")
	}
	w.logs.wait(t, "msg=connection", "mode=splice", "result=ok", "bytes_down="+strconv.Itoa(size))
	if got := w.counter(t, w.m.bytes, "registry", DirectionDownstream); got != size {
		t.Errorf("snigate_bytes_total downstream = %v, want %d", got, size)
	}
}

func sum(r io.Reader, n int64) []byte {
	h := sha256.New()
	io.CopyN(h, r, n)
	return h.Sum(nil)
}

func engineHalfClose(t *testing.T, newWorld func(Config, ...*Route) *world) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	up := newTCPUpstream(t, func(c *net.TCPConn) {
		b, _ := io.ReadAll(c) // the client half-closed: EOF, the socket stays open
		c.Write([]byte("reply after EOF: " + string(b[len(hello):])))
	})
	w := newWorld(Config{}, registryRoute(t, up.addr))
	c := w.dial(t)
	c.Write(append(hello, "request"...))
	c.CloseWrite()
	if got := string(readAll(t, c)); got != "reply after EOF: request" {
		t.Fatalf("client got %q", got)
	}
	w.logs.wait(t, "msg=connection", "result=ok", "bytes_down=24")
}

func engineIdle(t *testing.T, newWorld func(Config, ...*Route) *world) {
	up := newTCPUpstream(t, func(c *net.TCPConn) {
		readHelloThen(c)
		io.Copy(io.Discard, c) // never writes
	})
	w := newWorld(Config{IdleTimeout: 150 * time.Millisecond}, registryRoute(t, up.addr))
	c := w.dial(t)
	c.Write(captureHello(t, &tls.Config{ServerName: registryName}))
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("got %q from an idle tunnel", got)
	}
	line := w.logs.wait(t, "msg=connection", "result=idle_timeout")
	if !strings.Contains(line, "no bytes either way for timeouts.idle") {
		t.Errorf("log line %q: want the idle error", line)
	}
}

func engineSlowReader(t *testing.T, newWorld func(Config, ...*Route) *world) {
	const size = 2 << 20
	up := newTCPUpstream(t, func(c *net.TCPConn) {
		readHelloThen(c)
		b := make([]byte, 1000)
		src := io.LimitReader(randStream(7), size)
		for {
			n, err := io.ReadFull(src, b)
			if _, werr := c.Write(b[:n]); werr != nil || err != nil {
				break
			}
		}
		c.CloseWrite()
		io.Copy(io.Discard, c)
	})
	w := newWorld(Config{}, registryRoute(t, up.addr))
	slowRead(t, w, size)
	w.logs.wait(t, "msg=connection", "bytes_down="+strconv.Itoa(size))
}

func engineShutdownTunnel(t *testing.T, newWorld func(Config, ...*Route) *world) {
	w := newWorld(Config{}, registryRoute(t, readyEchoUpstream(t).addr))
	c := openReady(t, w)
	if err := w.srv.Shutdown(shutdownCtx(t, 0)); err == nil {
		t.Fatal("Shutdown returned nil while a tunnel was open")
	}
	readAll(t, c)
	w.logs.wait(t, "msg=connection", "result=shutdown")
}

// engineShutdownHello: Shutdown's start cuts a connection still sending
// its ClientHello (a deadline in the past through the session's handle),
// and Shutdown returns once it has ended.
func engineShutdownHello(t *testing.T, newWorld func(Config, ...*Route) *world) {
	w := newWorld(Config{}, registryRoute(t, readyEchoUpstream(t).addr))
	c := w.dial(t)
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	c.Write(hello[:10])
	w.waitSessions(t, 1)
	if err := w.srv.Shutdown(shutdownCtx(t, waitLimit)); err != nil {
		t.Fatalf("Shutdown: %v, want nil once the pending connection ended", err)
	}
	if got := readAll(t, c); len(got) != 0 {
		t.Fatalf("got %q", got)
	}
	w.logs.wait(t, "msg=connection", "result=shutdown")
}

// enginePassiveHealth: connections that fail on a refusing candidate
// retry on the next one and succeed; Check.Fall failures in a row take
// the refusing host down without any active check, and later
// connections no longer try it.
func enginePassiveHealth(t *testing.T, newWorld func(Config, ...*Route) *world) {
	const fall = 2
	dead := closedAddr(t)
	good := readyEchoUpstream(t)
	pool, err := upstream.New(upstream.Config{Route: "registry", Addrs: []string{dead, good.addr},
		Check: upstream.Check{Kind: upstream.CheckTCP, Fall: fall}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := registryRoute(t, good.addr)
	r.Pool = pool
	w := newWorld(Config{}, r)
	for i := 0; w.counter(t, w.m.dialFailures, "registry", dead) < fall; i++ {
		if i == 4*fall {
			t.Fatalf("%d connections, %v dial failures of %s: want %d", i, w.counter(t, w.m.dialFailures, "registry", dead), dead, fall)
		}
		openReady(t, w).Close()
	}
	for _, st := range pool.Status() {
		if st.Upstream == dead && st.Healthy {
			t.Fatalf("%s is still up after %d failed connections", dead, fall)
		}
	}
	for range 3 {
		openReady(t, w).Close()
	}
	if got := w.counter(t, w.m.dialFailures, "registry", dead); got != fall {
		t.Errorf("dial failures of the down host = %v, want %d: it is no candidate once down", got, fall)
	}
}
