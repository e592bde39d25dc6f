package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/snigate/snigate/internal/testnet"
)

// testUpstream is a TLS HTTP server on 127.0.0.1 that can be stopped and
// started again on the same address, which stays held in between
// (testnet.HeldAddr): stopped, it refuses connections, and nothing else
// can take its port. It answers every request with status (default 200)
// and counts the requests.
type testUpstream struct {
	t        testing.TB
	addr     string
	tls      *tls.Config
	status   atomic.Int64
	requests atomic.Int64
	srv      *http.Server
	done     chan struct{}
}

func startUpstream(t testing.TB, cfg *tls.Config) *testUpstream {
	t.Helper()
	u := &testUpstream{t: t, addr: testnet.HeldAddr(t), tls: cfg}
	u.status.Store(http.StatusOK)
	u.start()
	t.Cleanup(u.stop)
	return u
}

func (u *testUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.requests.Add(1)
	w.WriteHeader(int(u.status.Load()))
}

// start listens on u.addr (the same port after a stop) and serves.
func (u *testUpstream) start() {
	u.t.Helper()
	ln, err := net.Listen("tcp", u.addr)
	if err != nil {
		u.t.Fatalf("listen on %s: %v", u.addr, err)
	}
	u.addr = ln.Addr().String()
	u.srv = &http.Server{Handler: u, ErrorLog: log.New(io.Discard, "", 0)}
	u.done = make(chan struct{})
	go u.serve(tls.NewListener(ln, u.tls), u.srv, u.done)
}

func (u *testUpstream) serve(ln net.Listener, srv *http.Server, done chan struct{}) {
	defer close(done)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		u.t.Errorf("serve %s: %v", u.addr, err)
	}
}

// stop closes the listener and every connection; connecting then fails.
func (u *testUpstream) stop() {
	if u.srv == nil {
		return
	}
	_ = u.srv.Close()
	<-u.done
	u.srv = nil
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// mustPool builds a pool or fails the test.
func mustPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	if cfg.Route == "" {
		cfg.Route = "registry"
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rounds runs n health rounds.
func rounds(p *Pool, n int) {
	for range n {
		p.CheckOnce(context.Background())
	}
}

// addrsOf returns the addresses of hosts.
func addrsOf(hosts []*Host) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.Addr()
	}
	return out
}

// listenSilent listens on addr and accepts connections that never get an
// answer; they are closed at cleanup.
func listenSilent(t testing.TB, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	conns := make(chan net.Conn, 16)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		close(conns)
		for c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
