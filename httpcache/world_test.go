package httpcache

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/regcache"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// registryName is the name nodes pull from: the route's SNI.
const registryName = "registry.test"

// waitLimit bounds every wait of these tests: a failure deadline, never
// a synchronisation delay.
const waitLimit = 10 * time.Second

// fakeRegistry is go-containerregistry's registry behind mTLS, counting
// the requests it answers per method and path, with faults to inject.
type fakeRegistry struct {
	reg  http.Handler
	addr string
	srv  *http.Server
	done chan struct{}

	mu     sync.Mutex
	counts map[string]int // "GET /v2/..." -> requests
	deny   map[string]int // path -> status answered to HEAD and GET
	// gate, when set, holds a blob GET after half its body until closed.
	gate chan struct{}
	// breakMid makes blob GETs end after half their body.
	breakMid bool
	seen     chan string // "METHOD path" of every request, when set
	// redirect, when set, answers blob GETs and HEADs with a 307 to
	// redirect + the path (blob storage).
	redirect string
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.counts[key]++
	status, gate, breakMid, seen, redirect := f.deny[r.URL.Path], f.gate, f.breakMid, f.seen, f.redirect
	f.mu.Unlock()
	if seen != nil {
		seen <- key
	}
	if redirect != "" && strings.Contains(r.URL.Path, "/blobs/sha256:") {
		http.Redirect(w, r, redirect+r.URL.Path, http.StatusTemporaryRedirect)
		return
	}
	if status != 0 {
		http.Error(w, `{"errors":[{"code":"DENIED","message":"no"}]}`, status)
		return
	}
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") && (gate != nil || breakMid) {
		f.halfThen(w, r, gate, breakMid)
		return
	}
	f.reg.ServeHTTP(w, r)
}

// halfThen sends the first half of the blob, then waits for gate (and
// sends the rest) or breaks the response.
func (f *fakeRegistry) halfThen(w http.ResponseWriter, r *http.Request, gate chan struct{}, breakMid bool) {
	rec := httptest.NewRecorder()
	f.reg.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body[:len(body)/2])
	http.NewResponseController(w).Flush()
	if breakMid {
		panic(http.ErrAbortHandler)
	}
	select {
	case <-gate:
	case <-r.Context().Done():
		return
	}
	_, _ = w.Write(body[len(body)/2:])
}

func (f *fakeRegistry) count(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[method+" "+path]
}

func (f *fakeRegistry) set(fn func(f *fakeRegistry)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// stop closes the registry and its connections.
func (f *fakeRegistry) stop() {
	_ = f.srv.Close()
	<-f.done
}

// push stores content in the registry as a blob of team/app and returns
// its digest.
func (f *fakeRegistry) push(tb testing.TB, content []byte) string {
	tb.Helper()
	d := digestOf(content)
	req := httptest.NewRequest(http.MethodPost, "/v2/team/app/blobs/uploads/?digest="+d, bytes.NewReader(content))
	rec := httptest.NewRecorder()
	f.reg.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		tb.Fatalf("push blob: %d %s", rec.Code, rec.Body)
	}
	return d
}

// pushManifest stores m as team/app:tag and returns its digest.
func (f *fakeRegistry) pushManifest(tb testing.TB, tag string, m []byte) string {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPut, "/v2/team/app/manifests/"+tag, bytes.NewReader(m))
	req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	rec := httptest.NewRecorder()
	f.reg.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		tb.Fatalf("push manifest: %d %s", rec.Code, rec.Body)
	}
	return digestOf(m)
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func randomBytes(tb testing.TB, n int) []byte {
	tb.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return b
}

// world is a gateway (sni.Server, Bridge, this package's Cache over a
// regcache.Cache) in front of a fakeRegistry behind mTLS.
type world struct {
	ca    *pki.Authority
	up    *fakeRegistry
	store *regcache.Cache
	addr  string
	dir   string
	logs  *testkit.LogSink
}

type worldOpts struct {
	offline bool
	dir     string // "": a new temporary directory
	// redirectRoots, when set, are the roots trusted on redirects (the
	// bridge's RedirectRoots).
	redirectRoots bool
	maxSize       int64            // the store's MaxSize; 0: 1 GiB
	tags          time.Duration    // Config.Tags
	now           func() time.Time // Config.NowFunc
}

func newWorld(tb testing.TB, o worldOpts) *world {
	tb.Helper()
	ca, err := pki.NewAuthority("test CA")
	if err != nil {
		tb.Fatal(err)
	}
	w := &world{ca: ca, dir: o.dir, logs: testkit.NewLogSink()}
	if w.dir == "" {
		w.dir = tb.TempDir()
	}
	logger := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w.up = w.startRegistry(tb)
	w.store = w.openStore(tb, logger, cmp.Or(o.maxSize, 1<<30))
	w.startGateway(tb, logger, o)
	return w
}

func (w *world) leaf(tb testing.TB, cn string, names ...string) tls.Certificate {
	tb.Helper()
	c, _, _, err := w.ca.Leaf(cn, names...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func (w *world) startRegistry(tb testing.TB) *fakeRegistry {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f := &fakeRegistry{
		reg:  registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		addr: ln.Addr().String(), done: make(chan struct{}),
		counts: map[string]int{}, deny: map[string]int{},
	}
	f.srv = &http.Server{Handler: f, ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: waitLimit,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{w.leaf(tb, "registry", registryName, "127.0.0.1")},
			ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: w.ca.Pool(), NextProtos: []string{"h2", "http/1.1"},
		}}
	go func() {
		defer close(f.done)
		_ = f.srv.ServeTLS(ln, "", "")
	}()
	tb.Cleanup(f.stop)
	return f
}

func (w *world) openStore(tb testing.TB, logger *slog.Logger, maxSize int64) *regcache.Cache {
	tb.Helper()
	c, err := regcache.Open(regcache.Config{Route: "registry", Dir: w.dir, MaxSize: maxSize, Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func (w *world) startGateway(tb testing.TB, logger *slog.Logger, o worldOpts) {
	tb.Helper()
	pool, err := upstream.New(upstream.Config{Route: "registry", Addrs: []string{w.up.addr}, Logger: logger, Check: upstream.Check{Fall: 1}})
	if err != nil {
		tb.Fatal(err)
	}
	cache, err := New(Config{Route: "registry", Store: regStore{c: w.store}, Offline: o.offline, Tags: o.tags, NowFunc: o.now, Log: logger})
	if err != nil {
		tb.Fatal(err)
	}
	edge := w.leaf(tb, "edge")
	var roots *x509.CertPool
	var redirectAllow []netip.Prefix
	if o.redirectRoots {
		roots = w.ca.Pool()
		redirectAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} // the test storage is on loopback
	}
	b, err := httpbridge.New(httpbridge.Config{
		Route: "registry", Upstreams: pool, Forwarded: true, Chain: cache.Wrap, Log: logger, RedirectRoots: roots,
		RedirectAllow: redirectAllow,
		UpstreamTLS: func() *tls.Config {
			return &tls.Config{RootCAs: w.ca.Pool(), Certificates: []tls.Certificate{edge}, ServerName: registryName}
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	serve := w.leaf(tb, "gateway", registryName)
	tab, err := sni.NewTable([]*sni.Route{{Name: "registry", SNI: []string{registryName}, Mode: sni.ModeBridge,
		Pool: pool, Serve: testkit.StaticCert{Cert: &serve}, Handler: b}}, "")
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := sni.New(sni.Config{IdleTimeout: time.Hour, Logger: logger}, tab)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	w.addr = ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, sni.ErrServerClosed) {
			tb.Errorf("Serve: %v", err)
		}
	})
}

// node is an HTTP client on a node, "h2" or "http/1.1", whose DNS sends
// registryName to the gateway.
func (w *world) node(tb testing.TB, proto string) *http.Client {
	tb.Helper()
	t := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: w.ca.Pool(), ServerName: registryName, NextProtos: []string{proto}},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return new(net.Dialer).DialContext(ctx, network, w.addr)
		},
		ForceAttemptHTTP2:  proto == "h2",
		DisableCompression: true,
	}
	if proto != "h2" {
		t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	tb.Cleanup(t.CloseIdleConnections)
	return &http.Client{Transport: t, Timeout: waitLimit}
}

// get sends a GET (with extra headers as key, value pairs) and returns the
// status and the whole body, or the error of the request or the body.
func get(c *http.Client, path string, header ...string) (int, []byte, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, "https://"+registryName+path, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, resp.Header, err
}
