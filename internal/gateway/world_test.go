package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snigate/snigate/internal/handover"
	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit"
)

func TestMain(m *testing.M) {
	if file := os.Getenv(envUpgradeChild); file != "" && handover.Upgrading() {
		os.Exit(upgradeChildMain(file)) // started by an upgrade test
	}
	goleak.VerifyTestMain(m)
}

// world is a running gateway in front of TLS echo upstreams, all on
// loopback, with its configuration file in a temporary directory.
type world struct {
	t    *testing.T
	dir  string
	ca   *pki.Authority // signs every certificate in the world
	file string
	logs *testkit.LogSink

	g        *Gateway
	addrs    Addrs
	cancel   context.CancelFunc
	done     chan struct{}
	runErr   error
	reloaded chan error
	setup    func(*Gateway) // when set, called between New and Run
	upgraded bool           // g gave way to a new process, which serves now
}

// newWorld writes cfg (a configuration, with %[n]s placeholders filled by
// vars) and starts a gateway on it.
func newWorld(t *testing.T, cfg string) *world {
	t.Helper()
	w := &world{t: t, dir: t.TempDir(), logs: testkit.NewLogSink(), reloaded: make(chan error, 4)}
	ca, err := pki.NewAuthority("gateway test CA")
	if err != nil {
		t.Fatal(err)
	}
	w.ca = ca
	if err := ca.WriteCA(w.dir, "ca"); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.WriteLeaf(w.dir, "edge", "edge.test"); err != nil {
		t.Fatal(err)
	}
	w.file = filepath.Join(w.dir, "snigate.yaml")
	w.writeConfig(cfg)
	return w
}

func (w *world) writeConfig(cfg string) {
	w.t.Helper()
	tmp := w.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o644); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, w.file); err != nil {
		w.t.Fatal(err)
	}
}

// start runs the gateway until the test ends.
func (w *world) start() {
	w.t.Helper()
	logger := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ready := make(chan Addrs, 1)
	g, err := New(Options{
		ConfigFile:   w.file,
		Logger:       logger,
		ReadyFunc:    func(a Addrs) { ready <- a },
		ReloadedFunc: func(err error) { w.reloaded <- err },
	})
	if err != nil {
		w.t.Fatalf("New: %v", err)
	}
	w.g = g
	if w.setup != nil {
		w.setup(g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() { defer close(w.done); w.runErr = g.Run(ctx) }()
	w.t.Cleanup(w.stop)
	select {
	case w.addrs = <-ready:
	case <-w.done:
		w.t.Fatalf("Run: %v\n%s", w.runErr, w.logs)
	}
}

func (w *world) stop() {
	w.cancel()
	<-w.done
	if w.t.Failed() {
		w.t.Logf("gateway log:\n%s", w.logs)
	}
}

// dialTLS opens a TLS connection through the gateway for sni, trusting the
// world's CA.
func (w *world) dialTLS(sni string, alpn ...string) (*tls.Conn, error) {
	d := &tls.Dialer{Config: &tls.Config{ServerName: sni, RootCAs: w.ca.Pool(), NextProtos: alpn}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", w.addrs.TLS[0].String())
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// echoRoundTrip writes msg on c and expects it back.
func echoRoundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read echo: %v", err)
	}
	if string(got) != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

// adminGet fetches path from the admin API.
func (w *world) adminGet(path string) (int, string) {
	w.t.Helper()
	resp, err := http.Get("http://" + w.addrs.Admin.String() + path)
	if err != nil {
		w.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// echoServer is a TLS server on loopback that echoes every byte, requiring
// a client certificate from clientCAs when that is not nil.
type echoServer struct {
	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	onState func(tls.ConnectionState) // guarded by mu; see setOnState
}

// setOnState makes f see the connection state of every handshake from
// now on. A plain field set after startEcho raced with the accept loop's
// goroutines (the race detector found it): nothing orders a write in the
// test before a read in a handler of a connection that came later.
func (e *echoServer) setOnState(f func(tls.ConnectionState)) {
	e.mu.Lock()
	e.onState = f
	e.mu.Unlock()
}

func startEcho(t *testing.T, cert tls.Certificate, clientCAs *x509.CertPool, alpn ...string) *echoServer {
	t.Helper()
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: alpn}
	if clientCAs != nil {
		conf.ClientAuth, conf.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", conf)
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln, conns: map[net.Conn]struct{}{}}
	e.wg.Go(e.acceptLoop)
	t.Cleanup(e.close)
	return e
}

func (e *echoServer) addr() string { return e.ln.Addr().String() }

func (e *echoServer) acceptLoop() {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		e.conns[c] = struct{}{}
		e.mu.Unlock()
		e.wg.Go(func() { e.echo(c) })
	}
}

func (e *echoServer) echo(c net.Conn) {
	e.mu.Lock()
	onState := e.onState
	e.mu.Unlock()
	if tc, ok := c.(*tls.Conn); ok && onState != nil {
		if tc.Handshake() == nil {
			onState(tc.ConnectionState())
		}
	}
	io.Copy(c, c)
	c.Close()
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
}

func (e *echoServer) close() {
	e.ln.Close()
	e.mu.Lock()
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// leaf issues a server certificate for names from the world's CA.
func (w *world) leaf(names ...string) tls.Certificate {
	w.t.Helper()
	c, _, _, err := w.ca.Leaf(names[0], names...)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}
