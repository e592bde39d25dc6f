package sni

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/upstream"
)

// serveConnect runs the world's server on a second, CONNECT listener and
// returns its address.
func (w *world) serveConnect(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.srv.ServeConnect(ln) }()
	tb.Cleanup(func() {
		w.srv.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			tb.Errorf("ServeConnect returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// connectTo sends req on a new connection to the CONNECT listener and
// returns the connection and the response to it.
func connectTo(tb testing.TB, addr, req string) (net.Conn, *bufio.Reader, *http.Response) {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, req); err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		tb.Fatalf("response to %q: %v", req, err)
	}
	return c, br, resp
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// bufConn reads through a bufio.Reader that may hold bytes already.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// connectCase is a request to the CONNECT listener and its answer.
type connectCase struct {
	name   string
	req    string
	status int
	body   string // in the response body
	header string // "Name: value" in the response
	result string
}

// connectCases are the requests TestConnectAnswers sends, routed and refused.
func connectCases(t testing.TB) []connectCase {
	return []connectCase{
		{name: "routed name", req: "CONNECT registry.example.com:443 HTTP/1.1\r\nHost: registry.example.com:443\r\n\r\n", status: 200, result: "ok"},
		{name: "HTTP/1.0, mixed case, trailing dot", req: "CONNECT Registry.Example.COM.:443 HTTP/1.0\r\n\r\n", status: 200, result: "ok"},
		{name: "bare LF line ends", req: "CONNECT registry.example.com:443 HTTP/1.1\nUser-Agent: x\n\n", status: 200, result: "ok"},
		{name: "unrouted name", req: "CONNECT other.example.org:443 HTTP/1.1\r\n\r\n", status: 403,
			body: "this host:port is not routed by this gateway", result: "forbidden"},
		{name: "default route does not open other names", req: "CONNECT anything.example.net:443 HTTP/1.1\r\n\r\n", status: 403, result: "forbidden"},
		{name: "IPv4 address", req: "CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", status: 403, result: "forbidden"},
		{name: "IPv6 address", req: "CONNECT [::1]:443 HTTP/1.1\r\n\r\n", status: 403, result: "forbidden"},
		{name: "routed name, port 22", req: "CONNECT registry.example.com:22 HTTP/1.1\r\n\r\n", status: 403, result: "forbidden"},
		{name: "wildcard name one label deep", req: "CONNECT eu.mirror.example.com:443 HTTP/1.1\r\n\r\n", status: 200, result: "bad_hello"},
		{name: "wildcard name two labels deep", req: "CONNECT a.eu.mirror.example.com:443 HTTP/1.1\r\n\r\n", status: 403, result: "forbidden"},
		{name: "wildcard itself", req: "CONNECT *.mirror.example.com:443 HTTP/1.1\r\n\r\n", status: 400, result: "bad_request"},
		{name: "GET", req: "GET http://registry.example.com/v2/ HTTP/1.1\r\nHost: registry.example.com\r\n\r\n", status: 405,
			header: "Allow: CONNECT", body: "not a forward HTTP proxy", result: "bad_method"},
		{name: "no port", req: "CONNECT registry.example.com HTTP/1.1\r\n\r\n", status: 400, body: "want host:port", result: "bad_request"},
		{name: "HTTP/2.0", req: "CONNECT registry.example.com:443 HTTP/2.0\r\n\r\n", status: 400, body: "want HTTP/1.1", result: "bad_request"},
		{name: "two spaces", req: "CONNECT  registry.example.com:443 HTTP/1.1\r\n\r\n", status: 400, result: "bad_request"},
		{name: "folded header", req: "CONNECT registry.example.com:443 HTTP/1.1\r\nX: a\r\n b\r\n\r\n", status: 400, body: "folding", result: "bad_request"},
		{name: "request body", req: "CONNECT registry.example.com:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", status: 400,
			body: "has no body", result: "bad_request"},
		{name: "head too large", req: "CONNECT registry.example.com:443 HTTP/1.1\r\nX: " + strings.Repeat("a", 9000) + "\r\n\r\n", status: 400,
			body: "larger than 8192 bytes", result: "bad_request"},
		{name: "TLS sent to the CONNECT port", req: string(captureHello(t, &tls.Config{ServerName: registryName})), status: 400,
			body: "use an http:// proxy URL", result: "bad_request"},
		{name: "no healthy upstream", req: "CONNECT down.example.com:443 HTTP/1.1\r\n\r\n", status: 502, body: "no healthy upstream", result: "no_upstream"},
	}
}

func TestConnectAnswers(t *testing.T) {
	p := newBridgePKI(t)
	up := newTLSUpstream(t, p.upstreamConfig())
	down := p.route(t, up.addr)
	down.Name, down.SNI = "down", []string{"down.example.com"}
	down.Pool = newPool(t, "down", up.addr)
	down.Pool.(*upstream.Pool).SetState(up.addr, upstream.StateMaint)
	wild := spliceRoute(t, "wild", []string{"*.mirror.example.com"}, sinkUpstream(t).addr)
	def := spliceRoute(t, "fallback", nil, sinkUpstream(t).addr)
	w := newWorld(t, Config{WarnInterval: time.Nanosecond}, "fallback", p.route(t, up.addr), down, wild, def)
	addr := w.serveConnect(t)
	tests := connectCases(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br, resp := connectTo(t, addr, tt.req)
			var body []byte
			if resp.StatusCode != 200 { // a 200's body is the tunnel
				body, _ = io.ReadAll(resp.Body)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tt.status)
			}
			if !strings.Contains(string(body), tt.body) {
				t.Errorf("body %q does not contain %q", body, tt.body)
			}
			if strings.Contains(string(body), "registry.example.com") && tt.status == 403 {
				t.Errorf("403 body %q discloses a routed name", body)
			}
			if name, value, ok := strings.Cut(tt.header, ": "); ok && resp.Header.Get(name) != value {
				t.Errorf("header %s = %q, want %q", name, resp.Header.Get(name), value)
			}
			if tt.status == 200 && tt.result == "ok" {
				echoThroughTunnel(t, &bufConn{c, br}, p.nodeConfig())
			}
			c.Close()
			w.logs.wait(t, "msg=connection", "listener="+addr, "client="+c.LocalAddr().String(), "result="+tt.result)
		})
	}
	w.logs.wait(t, "level=WARN", "CONNECT refused", "other.example.org is not in any route")
	w.logs.wait(t, "level=WARN", "port 22 is not a TLS listener port (443)")
}

// echoThroughTunnel runs a TLS echo exchange over c.
func echoThroughTunnel(tb testing.TB, c net.Conn, cfg *tls.Config) {
	tb.Helper()
	tc := tls.Client(c, cfg)
	if _, err := tc.Write([]byte("ping")); err != nil {
		tb.Fatalf("TLS through the tunnel: %v", err)
	}
	tc.CloseWrite()
	if got, err := io.ReadAll(tc); string(got) != "ping" {
		tb.Fatalf("echo through the tunnel: %q, %v", got, err)
	}
}

func TestConnectInnerSNIMustMatch(t *testing.T) {
	other := spliceRoute(t, "other", []string{"other.example.com"}, sinkUpstream(t).addr)
	w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr), other)
	addr := w.serveConnect(t)
	tests := []struct {
		name string
		sni  string
	}{
		{name: "another routed name", sni: "other.example.com"},
		{name: "no SNI", sni: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br, resp := connectTo(t, addr, "CONNECT registry.example.com:443 HTTP/1.1\r\n\r\n")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			err := tls.Client(&bufConn{c, br}, &tls.Config{ServerName: tt.sni, InsecureSkipVerify: true}).Handshake()
			if err == nil || !strings.Contains(err.Error(), "access denied") {
				t.Errorf("handshake error %v, want the access_denied alert", err)
			}
			line := w.logs.wait(t, "msg=connection", "client="+c.LocalAddr().String(), "result=sni_mismatch")
			if strings.Contains(line, "upstream=127") {
				t.Errorf("a mismatched tunnel reached an upstream: %s", line)
			}
		})
	}
	w.logs.wait(t, "level=WARN", "its TLS server name differs from the CONNECT host")
}

// TestConnectPipelined: a client that sends its ClientHello right behind
// the request, without waiting for the 200, is served.
func TestConnectPipelined(t *testing.T) {
	w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr))
	addr := w.serveConnect(t)
	req := "CONNECT registry.example.com:443 HTTP/1.1\r\n\r\n" + string(captureHello(t, &tls.Config{ServerName: registryName}))
	c, br, resp := connectTo(t, addr, req)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b := make([]byte, 2)
	if _, err := io.ReadFull(br, b); err != nil || string(b) != "ok" {
		t.Fatalf("upstream answer %q, %v", b, err)
	}
	c.Close()
	w.logs.wait(t, "msg=connection", "listener="+addr, "sni="+registryName, "result=ok")
}

// httpsRegistry is an HTTPS server with a certificate for registryName.
func httpsRegistry(tb testing.TB, ca *testCA) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "registry %s %s", r.Host, r.URL.Path)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.leaf(tb, registryName)}}
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv
}

// TestConnectHTTPSProxyClient: Go's HTTP client with HTTPS_PROXY pointing
// at the CONNECT listener reaches a splice route.
func TestConnectHTTPSProxyClient(t *testing.T) {
	ca := newPKI(t, "registry CA")
	reg := httpsRegistry(t, ca)
	w := newWorld(t, Config{}, "", registryRoute(t, reg.Listener.Addr().String()))
	addr := w.serveConnect(t)
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: addr}),
		TLSClientConfig: &tls.Config{RootCAs: ca.pool},
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + registryName + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "registry " + registryName + " /v2/"; string(body) != want {
		t.Errorf("body %q, want %q", body, want)
	}
	tr.CloseIdleConnections()
	// The tunnel was logged (ok, or client_error when the client's close
	// met a session ticket still unread: a reset, which is the client's).
	w.logs.wait(t, "msg=connection", "listener="+addr, "route=registry", "mode=splice", "upstream=")

	_, err = (&http.Client{Transport: tr}).Get("https://other.example.org/v2/")
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("GET through CONNECT to an unrouted host: %v, want 403 Forbidden", err)
	}
}

// TestConnectCurl: curl --proxy http://gateway:port https://NAME/v2/
// through a bridge route.
func TestConnectCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("SNIGATE_REQUIRE_E2E") == "1" {
			t.Fatal("curl not found and SNIGATE_REQUIRE_E2E=1")
		}
		t.Skip("curl not found: install the curl package (test/deps.sh) to run this test")
	}
	p := newBridgePKI(t)
	upCfg := p.upstreamConfig("http/1.1")
	reg := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "mTLS client %s", r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	reg.TLS = upCfg
	reg.StartTLS()
	defer reg.Close()
	w := newWorld(t, Config{}, "", p.route(t, reg.Listener.Addr().String()))
	addr := w.serveConnect(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, p.serveCA.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	run := func(target string) (string, error) {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, curl, "-sS", "--noproxy", "", "--proxy", "http://"+addr, "--cacert", caFile, target)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := run("https://" + registryName + "/v2/"); err != nil || out != "mTLS client edge" {
		t.Fatalf("curl through CONNECT: %v\n%s", err, out)
	}
	w.logs.wait(t, "msg=connection", "listener="+addr, "mode=bridge", "result=ok")
	if out, err := run("https://other.example.org/v2/"); err == nil || !strings.Contains(out, "403") {
		t.Errorf("curl to an unrouted host: %v\n%s; want a 403 from the proxy", err, out)
	}
}

// TestConnectAllowAndProxyHeader: the CONNECT listener applies
// listen.allow and listen.proxy_protocol_from as the TLS listener does.
func TestConnectAllowAndProxyHeader(t *testing.T) {
	t.Run("not in allow", func(t *testing.T) {
		w := newWorld(t, Config{Allow: prefixes("10.0.0.0/8")}, "", registryRoute(t, sinkUpstream(t).addr))
		c, err := net.Dial("tcp", w.serveConnect(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "CONNECT registry.example.com:443 HTTP/1.1\r\n\r\n")
		if got := readAll(t, c); len(got) != 0 {
			t.Errorf("denied client got %q, want a close", got)
		}
		w.logs.wait(t, "msg=connection", "result=denied")
	})
	t.Run("PROXY header from a trusted balancer", func(t *testing.T) {
		w := newWorld(t, Config{ProxyProtocolFrom: prefixes("127.0.0.0/8"), Allow: prefixes("203.0.113.0/24")}, "",
			registryRoute(t, sinkUpstream(t).addr))
		addr := w.serveConnect(t)
		req := "PROXY TCP4 203.0.113.7 192.0.2.10 5555 3128\r\nCONNECT registry.example.com:443 HTTP/1.1\r\n\r\n"
		c, br, resp := connectTo(t, addr, req+string(captureHello(t, &tls.Config{ServerName: registryName})))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		b := make([]byte, 2)
		if _, err := io.ReadFull(br, b); err != nil || string(b) != "ok" {
			t.Fatalf("upstream answer %q, %v", b, err)
		}
		c.Close()
		w.logs.wait(t, "msg=connection", "listener="+addr, "client=203.0.113.7:5555", "result=ok")
	})
	t.Run("forged PROXY header from an untrusted source", func(t *testing.T) {
		w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr))
		c, err := net.Dial("tcp", w.serveConnect(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "PROXY TCP4 203.0.113.7 192.0.2.10 5555 3128\r\nCONNECT registry.example.com:443 HTTP/1.1\r\n\r\n")
		if got := readAll(t, c); len(got) != 0 {
			t.Errorf("forged header got %q, want a close", got)
		}
		w.logs.wait(t, "msg=connection", "client="+c.LocalAddr().String(), "result=proxy_header_error")
	})
}

// TestConnectTunnelPlainHTTP: plain HTTP sent inside a CONNECT tunnel was
// answered with a 400 that called the CONNECT port "snigate's TLS port"
// and blamed HTTPS_PROXY; it now says that the tunnel expects TLS to the
// host it named.
func TestConnectTunnelPlainHTTP(t *testing.T) {
	w := newWorld(t, Config{}, "", registryRoute(t, sinkUpstream(t).addr))
	addr := w.serveConnect(t)
	c, br, resp := connectTo(t, addr, "CONNECT registry.example.com:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, err := io.WriteString(c, "GET /v2/ HTTP/1.1\r\nHost: registry.example.com\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("answer inside the tunnel: %v", err)
	}
	body, _ := io.ReadAll(inner.Body)
	if inner.StatusCode != 400 {
		t.Fatalf("status %d inside the tunnel, want 400", inner.StatusCode)
	}
	for _, want := range []string{"CONNECT tunnel to registry.example.com expects TLS to registry.example.com", "https://registry.example.com"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("body %q does not say %q", body, want)
		}
	}
	if strings.Contains(string(body), "TLS (SNI) port") || strings.Contains(string(body), "HTTPS_PROXY") {
		t.Errorf("body %q calls the tunnel snigate's TLS port", body)
	}
	w.logs.wait(t, "level=WARN", "plain HTTP inside a CONNECT tunnel")
}
