package main

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// httpBench is the registry served over mTLS on loopback and the
// certificates of a bench run.
type httpBench struct {
	dir      string
	p        *material
	registry string // host:port
	stats    *upstreamStats
}

func startHTTPBench(t *testing.T) *httpBench {
	t.Helper()
	dir := t.TempDir()
	if err := writePKI(dir); err != nil {
		t.Fatal(err)
	}
	p, err := loadPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	hb := &httpBench{dir: dir, p: p, stats: &upstreamStats{}}
	rr, err := startRegistry("127.0.0.1:0", testBigSize, testLayerSize, p, hb.stats)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rr.serve() }()
	t.Cleanup(func() {
		rr.close()
		if err := <-done; err != nil {
			t.Errorf("registry: %v", err)
		}
	})
	hb.registry = rr.ln.Addr().String()
	return hb
}

// serveTLS is the node-leg configuration of the test proxies: the bench's
// serve certificate (SAN httpName).
func (hb *httpBench) serveTLS(t *testing.T) *tls.Config {
	cert, err := tls.LoadX509KeyPair(filepath.Join(hb.dir, "serve.crt"), filepath.Join(hb.dir, "serve.key"))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
}

// upstreamTLS is the proxies' upstream leg: the edge client certificate.
func (hb *httpBench) upstreamTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{hb.p.client}, RootCAs: hb.p.roots, ServerName: upstreamName}
}

// startHTTPProxy is an HTTP-aware reverse proxy of the registry, like the
// bench's nginx and HAProxy: it sets X-Forwarded-For from the client's
// address, replacing the client's own.
func (hb *httpBench) startHTTPProxy(t *testing.T) string {
	t.Helper()
	up := &url.URL{Scheme: "https", Host: hb.registry}
	tr := &http.Transport{TLSClientConfig: hb.upstreamTLS()}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(up); pr.SetXForwarded() },
		Transport: tr,
	}
	srv := &http.Server{Handler: rp, TLSConfig: hb.serveTLS(t)}
	ln := listen(t)
	done := make(chan struct{})
	go func() { srv.ServeTLS(ln, "", ""); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done; tr.CloseIdleConnections() })
	return ln.Addr().String()
}

// startCopier terminates the node's TLS and copies the bytes to an mTLS
// connection to the registry: what a bridge route without the HTTP bridge
// does.
func (hb *httpBench) startCopier(t *testing.T) string {
	t.Helper()
	ln := listen(t)
	serve, up := hb.serveTLS(t), hb.upstreamTLS()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := tls.Dial("tcp", hb.registry, up)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, u)
			mu.Unlock()
			node := tls.Server(c, serve)
			wg.Go(func() { io.Copy(u, node); u.CloseWrite() })
			wg.Go(func() { io.Copy(node, u); node.CloseWrite() })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closeAll(open)
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestRegistryALPN: the registry offers h2 and http/1.1, so a proxy's
// upstream leg gets whichever it prefers.
func TestRegistryALPN(t *testing.T) {
	hb := startHTTPBench(t)
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			cfg := hb.upstreamTLS()
			cfg.NextProtos = []string{proto}
			c, err := tls.Dial("tcp", hb.registry, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.ConnectionState().NegotiatedProtocol; got != proto {
				t.Errorf("negotiated %q, want %q", got, proto)
			}
		})
	}
	t.Run("no client certificate", func(t *testing.T) {
		cfg := hb.upstreamTLS()
		cfg.Certificates = nil
		c, err := tls.Dial("tcp", hb.registry, cfg)
		if err == nil {
			c.SetDeadline(time.Now().Add(opTimeout))
			_, err = c.Read(make([]byte, 1)) // TLS 1.3: the server's alert arrives after the handshake
			c.Close()
		}
		if err == nil {
			t.Error("the registry answered a client without a certificate")
		}
	})
}

// TestProbeHTTP: the probe passes the registry itself (direct) and an
// HTTP-aware proxy, and skips a target that copies bytes, whose registry
// sees the client's own X-Forwarded-For (snigate without the HTTP bridge
// did that, and would otherwise have been measured as an HTTP proxy).
func TestProbeHTTP(t *testing.T) {
	hb := startHTTPBench(t)
	tests := []struct {
		name    string
		target  target
		wantErr error
	}{
		{name: "direct", target: target{Name: "direct", HTTP: hb.registry, Direct: true}},
		{name: "http-aware proxy", target: target{Name: "proxy", HTTP: hb.startHTTPProxy(t)}},
		{name: "byte copier", target: target{Name: "copier", HTTP: hb.startCopier(t)}, wantErr: errCopiesBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat, err := probeHTTP(tt.target, hb.p, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("probeHTTP = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if cat.big.Size != testBigSize || len(cat.small) != smallBlobs {
				t.Errorf("catalog: large blob %d bytes, %d small blobs; want %d, %d", cat.big.Size, len(cat.small), testBigSize, smallBlobs)
			}
		})
	}
}

// TestRunnerSkipsCopier: a run over a copying target and an HTTP proxy
// measures the proxy in every http scenario and records the copier as
// skipped, with the reason, instead of failing or measuring it.
func TestRunnerSkipsCopier(t *testing.T) {
	hb := startHTTPBench(t)
	var log strings.Builder
	r := &runner{
		pki: hb.p, log: &log, out: filepath.Join(t.TempDir(), "results.jsonl"),
		targets: []target{
			{Name: "copier", HTTP: hb.startCopier(t)},
			{Name: "proxy", HTTP: hb.startHTTPProxy(t)},
		},
		scenarios: []string{"http-*"}, rounds: 1, firstRound: 1, conc: 2,
		httpTime: 100 * time.Millisecond, tputTime: 100 * time.Millisecond, httpStreams: []int{1, 2},
	}
	if err := r.run(); err != nil {
		t.Fatal(err)
	}
	results, err := readResults([]string{r.out})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, res := range results {
		got[res.Scenario+"/"+res.Target] = res
	}
	for _, sc := range []string{"http-manifest", "http-blobs", "http-bigblob-1", "http-bigblob-2"} {
		if skip := got[sc+"/copier"].Notes["skipped"]; !strings.Contains(skip, "copies bytes") {
			t.Errorf("%s/copier: skipped note %q, want the reason", sc, skip)
		}
		res := got[sc+"/proxy"]
		if res.Notes["error"] != "" || res.Values["errors"] != 0 {
			t.Errorf("%s/proxy: error %q, %v failed requests (first: %s)", sc, res.Notes["error"], res.Values["errors"], res.Notes["first_error"])
		}
		if res.Values["req_s"] <= 0 && res.Values["gbit_s"] <= 0 {
			t.Errorf("%s/proxy: no rate in %v", sc, res.Values)
		}
	}
	if !strings.Contains(log.String(), "target copier is skipped in the http scenarios") {
		t.Errorf("log does not say why copier is skipped:\n%s", log.String())
	}
}

func TestChosenHTTP(t *testing.T) {
	tests := []struct {
		name, scen, scenario string
		want                 bool
	}{
		{name: "glob", scen: "http-*", scenario: "http-bigblob-4", want: true},
		{name: "prefix", scen: "http", scenario: "http-manifest", want: true},
		{name: "stream counts", scen: "http-bigblob", scenario: "http-bigblob-1", want: true},
		{name: "exact", scen: "http-blobs", scenario: "http-blobs", want: true},
		{name: "other", scen: "http-*", scenario: "bridge-full", want: false},
		{name: "all", scen: "all", scenario: "http-blobs", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{scenarios: []string{tt.scen}}
			if got := r.chosen(tt.scenario); got != tt.want {
				t.Errorf("chosen(%q) with -scenarios %s = %v, want %v", tt.scenario, tt.scen, got, tt.want)
			}
		})
	}
}

func TestCheckForwarded(t *testing.T) {
	tests := []struct {
		name, seen string
		wantErr    bool
	}{
		{name: "replaced", seen: "127.0.0.1"},
		{name: "passed through", seen: spoofedFor, wantErr: true},
		{name: "appended", seen: spoofedFor + ", 127.0.0.1", wantErr: true},
		{name: "not set", seen: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkForwarded(tt.seen); (err != nil) != tt.wantErr {
				t.Errorf("checkForwarded(%q) = %v, want error %v", tt.seen, err, tt.wantErr)
			}
		})
	}
}

// TestHTTPVerdicts: issue 15's targets - small blobs at 1.3× the best
// reference, memory per request in flight at most 64 KiB, a skipped
// target shown as such.
func TestHTTPVerdicts(t *testing.T) {
	s := summarize([]Result{
		{Scenario: "http-blobs", Target: "snigate", Round: 1, Values: map[string]float64{"req_s": 1200}},
		{Scenario: "http-blobs", Target: "snigate-x25519", Round: 1, Values: map[string]float64{"req_s": 1400}},
		{Scenario: "http-blobs", Target: "haproxy", Round: 1, Values: map[string]float64{"req_s": 1000}},
		{Scenario: "http-blobs", Target: "nginx", Round: 1, Values: map[string]float64{"req_s": 900}},
		{Scenario: "http-bigblob-4", Target: "snigate", Round: 1, Values: map[string]float64{"gbit_s": 5, "kib_req": 70}, CPU: CPUShare{Proxy: 100}},
		{Scenario: "http-bigblob-4", Target: "haproxy", Round: 1, Values: map[string]float64{"gbit_s": 4, "kib_req": 20}},
		{Scenario: "http-bigblob-4", Target: "nginx", Round: 1, Notes: map[string]string{"skipped": "it fails to answer"}},
	})
	c := comparison{subjects: []string{"snigate", "snigate-x25519"}, base: "haproxy", refs: []string{"haproxy", "nginx"}}
	rows := map[string]row{}
	for _, rw := range s.rows() {
		rows[rw.scenario+"/"+rw.key] = rw
	}
	tests := []struct {
		name, key, subject, want string
	}{
		{name: "blobs below 1.3x", key: "http-blobs/req_s", subject: "snigate", want: "**no** (≥ 1.3× best)"},
		{name: "blobs above 1.3x", key: "http-blobs/req_s", subject: "snigate-x25519", want: "yes (≥ 1.3× best)"},
		{name: "large blob rate", key: "http-bigblob-4/gbit_s", subject: "snigate", want: "yes"},
		{name: "memory per request", key: "http-bigblob-4/kib_req", subject: "snigate", want: "**no** (≤ 64)"},
		{name: "informative", key: "http-bigblob-4/per_core", subject: "snigate", want: "—"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rw, ok := rows[tt.key]
			if !ok {
				t.Fatalf("no row %s", tt.key)
			}
			if got := c.verdict(s, rw, tt.subject); got != tt.want {
				t.Errorf("verdict = %q, want %q", got, tt.want)
			}
		})
	}
	if got := s.cell(rows["http-bigblob-4/gbit_s"], "nginx", "haproxy"); got != "skipped" {
		t.Errorf("nginx's cell = %q, want skipped", got)
	}
}
