package sni

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pires/go-proxyproto"
)

// sinkUpstream reads the replayed ClientHello, answers "ok" and then
// discards everything until EOF.
func sinkUpstream(tb testing.TB) *tcpUpstream {
	return newTCPUpstream(tb, func(c *net.TCPConn) {
		if _, err := readHelloThen(c); err != nil {
			return
		}
		c.Write([]byte("ok"))
		io.Copy(io.Discard, c)
	})
}

func registryRoute(tb testing.TB, addrs ...string) *Route {
	return spliceRoute(tb, "registry", []string{registryName}, addrs...)
}

func TestServerBadInput(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	// Only the cases about the ClientHello timeout run with a short one:
	// under load a client's first bytes can reach the server later than
	// 100ms after it accepted, and a short timeout everywhere turned
	// "plain_http" or "bad_hello" into "timeout".
	const stallTimeout = 100 * time.Millisecond
	tests := []struct {
		name         string
		send         []byte
		halfClose    bool
		helloTimeout time.Duration // 0: waitLimit, longer than any test waits
		reply        []string      // what the client must receive; nil: nothing
		result       string
		warn         string
	}{
		{name: "not TLS", send: []byte("\x00\x01binary junk"), result: "not_tls", warn: "connection is not TLS"},
		{name: "text that is not HTTP", send: []byte("HELLO there\r\n"), result: "not_tls", warn: "connection is not TLS"},
		{name: "plain HTTP", send: []byte("GET /v2/ HTTP/1.1\r\nHost: registry.example.com\r\n\r\n"), result: "plain_http",
			reply: []string{"HTTP/1.1 400 Bad Request", "TLS (SNI) port", "use https://NAME:", "sent plain HTTP (\"GET /v2/ HTTP/1.1\")"},
			warn:  "plain HTTP on a TLS listener"},
		{name: "HTTP CONNECT (HTTPS_PROXY at the TLS port)", send: []byte("CONNECT registry.example.com:443 HTTP/1.1\r\n\r\n"), result: "plain_http",
			reply: []string{"HTTP/1.1 400 Bad Request", "HTTPS_PROXY", "CONNECT listener (listen.connect)"},
			warn:  "HTTPS_PROXY probably points at snigate's TLS port"},
		{name: "truncated ClientHello", send: hello[:len(hello)/2], halfClose: true, result: "bad_hello", warn: "malformed or truncated ClientHello"},
		{name: "stalled ClientHello", send: hello[:len(hello)/2], helloTimeout: stallTimeout, result: "timeout", warn: "no complete ClientHello within timeouts.client_hello"},
		{name: "client sends nothing", helloTimeout: stallTimeout, result: "timeout", warn: "no complete ClientHello within timeouts.client_hello"},
		{name: "oversized record", send: []byte{recordTypeHandshake, 3, 1, 0x40, 0x01}, result: "too_large", warn: "ClientHello larger than TLS allows"},
		{name: "PROXY header from an untrusted source", send: []byte("PROXY TCP4 203.0.113.7 127.0.0.1 5555 443\r\n"), result: "proxy_header_error",
			warn: "PROXY header from a source not in listen.proxy_protocol_from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, Config{ClientHelloTimeout: cmp.Or(tt.helloTimeout, waitLimit)}, "", registryRoute(t, sinkUpstream(t).addr))
			c := w.dial(t)
			c.Write(tt.send)
			if tt.halfClose {
				c.CloseWrite()
			}
			got := string(readAll(t, c))
			if tt.reply == nil && got != "" {
				t.Errorf("client got %q, want a close", got)
			}
			for _, r := range tt.reply {
				if !strings.Contains(got, r) {
					t.Errorf("reply %q does not contain %q", got, r)
				}
			}
			c.Close()
			w.logs.wait(t, "level=WARN", tt.warn, "client="+c.LocalAddr().String())
			w.logs.wait(t, "msg=connection", "result="+tt.result, "client="+c.LocalAddr().String())
		})
	}
}

func TestServerUnknownSNI(t *testing.T) {
	w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr))
	for _, cfg := range []*tls.Config{
		{ServerName: "other.example.org"},
		{InsecureSkipVerify: true}, // no SNI at all
	} {
		tc := tls.Client(w.dial(t), cfg)
		err := tc.Handshake()
		if err == nil || !strings.Contains(err.Error(), "unrecognized name") {
			t.Errorf("sni %q: handshake error %v, want the unrecognized_name alert", cfg.ServerName, err)
		}
		w.logs.wait(t, "msg=connection", "sni="+cmp.Or(cfg.ServerName, `""`)+" ", "result=unknown_sni")
	}
	w.logs.wait(t, "level=WARN", "no route for the server name", "sni=other.example.org")
}

func TestServerDefaultRoute(t *testing.T) {
	up := sinkUpstream(t)
	def := spliceRoute(t, "fallback", nil, up.addr)
	w := newWorld(t, Config{}, "fallback", registryRoute(t, closedAddr(t)), def)
	c := w.dial(t)
	c.Write(captureHello(t, &tls.Config{ServerName: "unlisted.example.org"}))
	b := make([]byte, 2)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ok" {
		t.Fatalf("got %q %v through the default route", b, err)
	}
	c.Close()
	w.logs.wait(t, "msg=connection", "sni=unlisted.example.org", "route=fallback", "result=ok")
}

func TestServerMaxConnections(t *testing.T) {
	w := newWorld(t, Config{MaxConnections: 1}, "", registryRoute(t, sinkUpstream(t).addr))
	first := w.dial(t) // accepted first and holds the only slot while it waits
	second := w.dial(t)
	if got := readAll(t, second); len(got) != 0 {
		t.Fatalf("second connection got %q, want a close", got)
	}
	w.logs.wait(t, "msg=connection", "client="+second.LocalAddr().String(), "result=limit")
	w.logs.wait(t, "level=WARN", "max_connections reached")
	if n := w.counter(t, w.m.connections, w.addr, "", "limit"); n != 1 {
		t.Errorf("connections{result=limit} = %v, want 1", n)
	}
	first.Close()
	w.logs.wait(t, "msg=connection", "client="+first.LocalAddr().String(), "result=bad_hello")
	third := w.dial(t) // the slot is free again
	third.Write(captureHello(t, &tls.Config{ServerName: registryName}))
	b := make([]byte, 2)
	if _, err := io.ReadFull(third, b); err != nil {
		t.Fatalf("third connection after the first ended: %v", err)
	}
}

func TestServerAllow(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	tests := []struct {
		name   string
		allow  []netip.Prefix
		result string
	}{
		{name: "not in allow", allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, result: "denied"},
		{name: "in allow", allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8")}, result: "ok"},
		{name: "empty allows all", result: "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, Config{Allow: tt.allow}, "", registryRoute(t, sinkUpstream(t).addr))
			c := w.dial(t)
			c.Write(hello)
			got := string(readAtMost(t, c, 2))
			if (tt.result == "ok") != (got == "ok") {
				t.Fatalf("client got %q", got)
			}
			c.Close()
			w.logs.wait(t, "msg=connection", "result="+tt.result)
			if tt.result == "denied" {
				w.logs.wait(t, "level=WARN", "not in listen.allow")
			}
		})
	}
}

// readAtMost reads up to n bytes, stopping early at EOF.
func readAtMost(tb testing.TB, c net.Conn, n int) []byte {
	c.SetReadDeadline(time.Now().Add(waitLimit))
	b := make([]byte, n)
	k, _ := io.ReadFull(c, b)
	return b[:k]
}

func TestServerProxyProtocolIn(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	src := &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 5555}
	dst := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 443}
	header := func(v byte) []byte {
		b, err := proxyproto.HeaderProxyFromAddrs(v, src, dst).Format()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name   string
		send   []byte
		result string
		client string
	}{
		{name: "v1 from a trusted source", send: header(1), result: "ok", client: "203.0.113.7:5555"},
		{name: "v2 from a trusted source", send: header(2), result: "ok", client: "203.0.113.7:5555"},
		{name: "trusted source without a header", send: nil, result: "proxy_header_error"},
		{name: "garbled header", send: []byte("PROXY TCP4 nonsense\r\n"), result: "proxy_header_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(chan string, 1)
			up := newTCPUpstream(t, func(c *net.TCPConn) {
				h, err := proxyproto.Read(bufioReader(c))
				if err == nil {
					seen <- h.SourceAddr.String()
				}
				c.Write([]byte("ok"))
			})
			r := registryRoute(t, up.addr)
			r.ProxyProtocol = ProxyProtocolV2
			w := newWorld(t, Config{
				ProxyProtocolFrom: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
				Allow:             []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, // the header's source, not the balancer
			}, "", r)
			c := w.dial(t)
			c.Write(append(tt.send, hello...))
			got := string(readAtMost(t, c, 2))
			c.Close()
			if tt.result != "ok" {
				w.logs.wait(t, "level=WARN", "PROXY header")
				w.logs.wait(t, "msg=connection", "result="+tt.result)
				return
			}
			if got != "ok" {
				t.Fatalf("client got %q", got)
			}
			if s := <-seen; s != tt.client {
				t.Errorf("upstream's PROXY header names %s, want %s", s, tt.client)
			}
			w.logs.wait(t, "msg=connection", "client="+tt.client, "result=ok")
		})
	}
}

func TestServerLogLineKeyOrder(t *testing.T) {
	w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr))
	c := w.dial(t)
	c.Write([]byte("junk!"))
	readAll(t, c)
	line := w.logs.wait(t, "msg=connection")
	want := []string{"listener", "client", "sni", "route", "mode", "upstream", "result", "bytes_up", "bytes_down", "duration", "conn", "err"}
	var keys []string
	for _, f := range strings.Fields(line[strings.Index(line, "listener="):]) {
		if k, _, ok := strings.Cut(f, "="); ok && !strings.ContainsAny(k, `"`) {
			keys = append(keys, k)
		}
	}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Errorf("keys %v, want %v", keys, want)
	}
}

func TestServerShutdown(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	openTunnel := func(w *world) *net.TCPConn {
		c := w.dial(t)
		c.Write(hello)
		if got := string(readAtMost(t, c, 2)); got != "ok" {
			t.Fatalf("tunnel: %q", got)
		}
		return c
	}
	t.Run("waits for tunnels and refuses new connections", func(t *testing.T) {
		w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr))
		tunnel := openTunnel(w)
		waiting := w.dial(t) // still reading its ClientHello: ended at once
		// The bug was a Shutdown racing the dial: under load the server had
		// not accepted waiting yet, the kernel reset it in the accept queue
		// and no connection line was ever logged for it.
		w.waitSessions(t, 2)
		done := make(chan error, 1)
		go func() { done <- w.srv.Shutdown(shutdownCtx(t, waitLimit)) }()
		<-w.served
		if _, err := net.Dial("tcp", w.addr); err == nil {
			t.Error("dial succeeded after Shutdown closed the listener")
		}
		readAll(t, waiting)
		w.logs.wait(t, "msg=connection", "client="+waiting.LocalAddr().String(), "result=shutdown")
		select {
		case err := <-done:
			t.Fatalf("Shutdown returned %v while a tunnel was open", err)
		default:
		}
		tunnel.Close()
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		w.logs.wait(t, "msg=connection", "client="+tunnel.LocalAddr().String(), "result=ok")
	})
	t.Run("closes tunnels when the context ends", func(t *testing.T) {
		w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr))
		tunnel := openTunnel(w)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := w.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown = %v, want context.Canceled", err)
		}
		readAll(t, tunnel)
		w.logs.wait(t, "msg=connection", "client="+tunnel.LocalAddr().String(), "result=shutdown")
		if err := w.srv.Serve(newListener(t)); !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve after Shutdown = %v", err)
		}
	})
}

func newListener(tb testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// flakyListener fails its first Accepts with a temporary error (EMFILE),
// then blocks until closed.
type flakyListener struct {
	fails     int
	closed    chan struct{}
	closeOnce sync.Once
}

type tempErr struct{}

func (tempErr) Error() string   { return "accept: too many open files" }
func (tempErr) Temporary() bool { return true }
func (tempErr) Timeout() bool   { return false }

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, tempErr{}
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *flakyListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *flakyListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443} }

func TestServerAcceptBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := newLogSink()
		tab, err := NewTable(nil, "")
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(Config{Logger: slog.New(slog.NewTextHandler(logs, nil))}, tab)
		if err != nil {
			t.Fatal(err)
		}
		ln := &flakyListener{fails: 12, closed: make(chan struct{})}
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- srv.Serve(ln) }()
		time.Sleep(time.Minute)
		// 5+10+20+...+640ms, then 1s each: a backoff, not a busy loop.
		got := strings.Count(logs.String(), "accept failed; retrying")
		if got != 12 {
			t.Errorf("%d retries logged, want 12", got)
		}
		for _, b := range []string{"backoff=5ms", "backoff=640ms", "backoff=1s"} {
			if !strings.Contains(logs.String(), b) {
				t.Errorf("log lacks %s:\n%s", b, logs)
			}
		}
		synctest.Wait()
		if elapsed := time.Since(start); elapsed != time.Minute {
			t.Fatalf("clock at %v", elapsed)
		}
		srv.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve = %v, want ErrServerClosed", err)
		}
	})
}
