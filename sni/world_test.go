package sni

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/snigate/snigate/internal/testnet"
)

// waitLimit bounds every wait for an event in these tests; it is a
// failure deadline, never a synchronisation delay.
const waitLimit = 10 * time.Second

// logSink captures slog text output and wakes waiters on each record.
type logSink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	notify chan struct{}
}

func newLogSink() *logSink { return &logSink{notify: make(chan struct{})} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.notify)
	l.notify = make(chan struct{})
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// wait returns the first log line containing every one of parts, waiting
// for it to be written.
func (l *logSink) wait(tb testing.TB, parts ...string) string {
	tb.Helper()
	timeout := time.After(waitLimit)
	for {
		l.mu.Lock()
		text, ch := l.buf.String(), l.notify
		l.mu.Unlock()
		if line, ok := findLine(text, parts); ok {
			return line
		}
		select {
		case <-ch:
		case <-timeout:
			tb.Fatalf("no log line with %q; log:\n%s", parts, text)
		}
	}
}

func findLine(text string, parts []string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		ok := line != ""
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line, true
		}
	}
	return "", false
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
	eventually(tb, "the server to track "+strconv.Itoa(n)+" connections", func() bool {
		w.srv.mu.Lock()
		defer w.srv.mu.Unlock()
		return len(w.srv.sessions) == n
	})
}

// eventually polls cond until it holds, failing after waitLimit. It is for
// conditions with no event to wait on (goroutine counts, the connection
// set); the poll interval is not a synchronisation delay.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// counter returns the value of a counter series of the world's metrics.
func (w *world) counter(tb testing.TB, c *prometheus.CounterVec, labels ...string) float64 {
	tb.Helper()
	var m dto.Metric
	if err := c.WithLabelValues(labels...).Write(&m); err != nil {
		tb.Fatal(err)
	}
	return m.GetCounter().GetValue()
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
