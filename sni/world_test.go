package sni

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/internal/testnet"
)

// waitLimit bounds every wait for an event in these tests; it is a
// failure deadline, never a synchronisation delay.
const waitLimit = testkit.WaitLimit

// logSink is the shared test kit's sink under the name (and wait) the
// package's tests call.
type logSink struct{ testkit.LogSink }

func newLogSink() *logSink { return &logSink{} }

// wait returns the first log line containing every one of parts, waiting
// for it to be written (testkit.LogSink.Wait).
func (l *logSink) wait(tb testing.TB, parts ...string) string {
	tb.Helper()
	return l.Wait(tb, parts...)
}

// world is a Server on 127.0.0.1:0 with captured logs and metrics.
type world struct {
	srv  *Server
	addr string
	logs *logSink
	reg  *prometheus.Registry
	m    *Metrics

	served   chan struct{} // closed when Serve returns
	serveErr error
}

func newWorld(tb testing.TB, cfg Config, defaultRoute string, routes ...*Route) *world {
	tb.Helper()
	return newWorldWith(tb, nil, cfg, defaultRoute, routes...)
}

// newWorldWith is newWorld with setup run on the server before it serves.
func newWorldWith(tb testing.TB, setup func(*Server), cfg Config, defaultRoute string, routes ...*Route) *world {
	tb.Helper()
	w := &world{logs: newLogSink(), reg: prometheus.NewRegistry()}
	w.m = NewMetrics(w.reg)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg.Metrics = w.m
	tab, err := NewTable(routes, defaultRoute)
	if err != nil {
		tb.Fatal(err)
	}
	if w.srv, err = New(cfg, tab); err != nil {
		tb.Fatal(err)
	}
	if setup != nil {
		setup(w.srv)
	}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	w.addr = ln.Addr().String()
	w.served = make(chan struct{})
	go func() {
		w.serveErr = w.srv.Serve(ln)
		close(w.served)
	}()
	tb.Cleanup(func() {
		w.srv.Close()
		<-w.served
		if !errors.Is(w.serveErr, ErrServerClosed) {
			tb.Errorf("Serve returned %v, want ErrServerClosed", w.serveErr)
		}
	})
	return w
}

func (w *world) dial(tb testing.TB) *net.TCPConn {
	tb.Helper()
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// waitSessions waits until the server tracks n connections: the server's
// own record that it has accepted a connection (or let it go). A dial
// returns once the kernel has queued the connection, before Serve has
// accepted it, so a test that acts on "the server has this connection"
// waits for this first.
func (w *world) waitSessions(tb testing.TB, n int) {
	tb.Helper()
	testkit.Poll(tb, "the server to track "+strconv.Itoa(n)+" connections", func() bool {
		w.srv.mu.Lock()
		defer w.srv.mu.Unlock()
		return len(w.srv.sessions) == n
	})
}

// counter returns the value of a counter series of the world's metrics.
func (w *world) counter(tb testing.TB, c *prometheus.CounterVec, labels ...string) float64 {
	tb.Helper()
	return testkit.Value(tb, c.WithLabelValues(labels...))
}

// tcpUpstream is a TCP server on 127.0.0.1:0 that runs handle for each
// connection and waits for the handlers when the test ends.
type tcpUpstream struct {
	ln   net.Listener
	wg   sync.WaitGroup
	addr string
}

func newTCPUpstream(tb testing.TB, handle func(c *net.TCPConn)) *tcpUpstream {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	u := &tcpUpstream{ln: ln, addr: ln.Addr().String()}
	u.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.wg.Go(func() {
				defer c.Close()
				handle(c.(*net.TCPConn))
			})
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		u.wg.Wait()
	})
	return u
}

// closedAddr returns a loopback address that refuses connections and
// that no other socket can take while the test runs (testnet.ClosedAddr).
func closedAddr(tb testing.TB) string {
	tb.Helper()
	return testnet.ClosedAddr(tb)
}

// readAll reads c to EOF within waitLimit.
func readAll(tb testing.TB, c net.Conn) []byte {
	tb.Helper()
	c.SetReadDeadline(time.Now().Add(waitLimit))
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		tb.Logf("read: %v", err)
	}
	return b
}

// readHelloThen reads the ClientHello the gateway replays and returns the
// bytes read.
func readHelloThen(c net.Conn) ([]byte, error) {
	_, raw, err := ReadClientHello(c, nil)
	return raw, err
}

func shutdownCtx(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
