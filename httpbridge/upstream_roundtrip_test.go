package httpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/upstream"
)

// TestHTTP1RequestWrittenAsTransportWrote: a GET or HEAD reaches the
// registry byte for byte as net/http's Transport wrote it on the same
// pool (the request's Host, no Accept-Encoding added, Go-http-client/1.1
// when the request has no User-Agent header and none when it has an
// empty one, as ReverseProxy leaves it, Connection: close when the
// request says so).
func TestHTTP1RequestWrittenAsTransportWrote(t *testing.T) {
	tests := []struct {
		name, method, target, host string
		header                     http.Header
		close                      bool
	}{
		{name: "no user agent", method: "GET", target: "/v2/", host: registryName},
		{name: "empty user agent", method: "GET", target: "/v2/team/app/manifests/v1", host: registryName,
			header: http.Header{"User-Agent": {""}, "Accept": {"application/vnd.oci.image.index.v1+json", "*/*"}}},
		{name: "head with node headers", method: "HEAD", target: "/v2/team/app/blobs/" + dgst, host: registryName,
			header: http.Header{"User-Agent": {"containerd/2.0"}, "Accept-Encoding": {"gzip"}, "X-Forwarded-For": {"10.0.0.7"}}},
		{name: "query", method: "GET", target: "/v2/team/app/tags/list?n=10&last=v%201", host: registryName},
		{name: "no host (probe)", method: "GET", target: "/v2/"},
		{name: "close", method: "GET", target: "/v2/", host: registryName, close: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPKI(t)
			reg := startRawRegistry(t, p, func(c net.Conn, _ *http.Request) bool { return write(c, okAnswer) })
			w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
			u := w.bridge.client
			newReq := func() *http.Request {
				req, err := http.NewRequest(tc.method, "https://"+registryName+tc.target, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host, req.Close = tc.host, tc.close
				for k, v := range tc.header {
					req.Header[k] = v
				}
				return req
			}
			old := newReq() // as try() sent it to the Transport
			old.URL.Host = reg.addr
			roundTripOK(t, u.current().transport, old)
			want := <-reg.heads
			roundTripOK(t, u, newReq())
			if got := <-reg.heads; got != want {
				t.Errorf("the registry read\n%q\nwant, as the Transport wrote it,\n%q", got, want)
			}
		})
	}
}

func roundTripOK(tb testing.TB, rt http.RoundTripper, req *http.Request) {
	tb.Helper()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		tb.Fatalf("%s %s: %d", req.Method, req.URL, resp.StatusCode)
	}
}

// TestHTTP1ResponseHeaderTimeoutNamed: an upstream that takes a GET and
// sends nothing fails the attempt after ResponseHeaderTimeout with an
// error that names timeouts.response_header, and its connection is
// closed. Before, the error was net/http's "timeout awaiting response
// headers".
func TestHTTP1ResponseHeaderTimeoutNamed(t *testing.T) {
	p := newTestPKI(t)
	reg := startRawRegistry(t, p, func(c net.Conn, _ *http.Request) bool {
		_, _ = io.Copy(io.Discard, c) // until the gateway closes it
		return false
	})
	w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1, ResponseHeaderTimeout: 50 * time.Millisecond}})
	req, _ := http.NewRequest("GET", "https://"+registryName+"/v2/", nil)
	_, err := w.bridge.client.RoundTrip(req)
	if err == nil || !strings.Contains(err.Error(), "timeouts.response_header exceeded (50ms)") {
		t.Fatalf("err %v, want one naming timeouts.response_header (50ms)", err)
	}
	reg.waitClosed(t, 0, "its answer timed out")
}

// TestHTTP1CancelClosesConnection: a request cancelled while it waits for
// the answer's headers, or while its body comes, ends at once with the
// context's error, its connection is closed (never pooled), and the next
// request is answered on a new one.
func TestHTTP1CancelClosesConnection(t *testing.T) {
	tests := []struct {
		name   string
		answer string // "" none
	}{
		{name: "waiting for headers"},
		{name: "mid-body", answer: "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nfirst part"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPKI(t)
			got := make(chan struct{}, 1)
			reg := startRawRegistry(t, p, func(c net.Conn, r *http.Request) bool {
				if r.URL.Path != "/v2/team/app/blobs/"+dgst {
					return write(c, okAnswer)
				}
				_ = write(c, tc.answer)
				got <- struct{}{}
				_, _ = io.Copy(io.Discard, c)
				return false
			})
			w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
			u := w.bridge.client
			ctx, cancel := context.WithCancel(t.Context())
			req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+registryName+"/v2/team/app/blobs/"+dgst, nil)
			if tc.answer == "" {
				go func() { <-got; cancel() }()
				if _, err := u.RoundTrip(req); !errors.Is(err, context.Canceled) {
					t.Fatalf("RoundTrip: %v, want context.Canceled", err)
				}
			} else {
				resp, err := u.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				<-got
				if _, err := io.ReadFull(resp.Body, make([]byte, len("first part"))); err != nil {
					t.Fatal(err)
				}
				cancel()
				if _, err := resp.Body.Read(make([]byte, 10)); !errors.Is(err, context.Canceled) {
					t.Fatalf("body read after the cancel: %v, want context.Canceled", err)
				}
				_ = resp.Body.Close()
			}
			reg.waitClosed(t, 0, "its request was cancelled")
			if n := u.current().h1.idleCount(reg.addr); n != 0 {
				t.Errorf("%d idle connections after the cancel, want 0", n)
			}
			req, _ = http.NewRequest("GET", "https://"+registryName+"/v2/", nil)
			roundTripOK(t, u, req)
			if n := reg.accepted(); n != 2 {
				t.Errorf("the registry accepted %d connections, want 2", n)
			}
		})
	}
}

// TestHTTP1FailureRetriedOnlyWhenStale: a request that fails on a new
// connection, or on a reused one after a byte of its answer came, is
// not sent again to the same upstream: the attempt failed (with a second
// upstream, the candidate loop sends it there). Only a reused connection
// failing before any byte is replaced (TestStaleHTTP1ConnectionRetried).
func TestHTTP1FailureRetriedOnlyWhenStale(t *testing.T) {
	tests := []struct {
		name   string
		warm   bool   // a first GET pools a connection
		answer string // written on /v2/fail before the registry closes
	}{
		{name: "new connection closed unanswered"},
		{name: "new connection closed mid-status", answer: "HTTP/1.1 2"},
		{name: "reused connection closed mid-status", warm: true, answer: "HTTP/1.1 2"},
	}
	for _, tc := range tests {
		for _, two := range []bool{false, true} {
			name := tc.name + map[bool]string{false: "/one upstream", true: "/two upstreams"}[two]
			t.Run(name, func(t *testing.T) {
				p := newTestPKI(t)
				bad := startRawRegistry(t, p, func(c net.Conn, r *http.Request) bool {
					if r.URL.Path == "/v2/fail" {
						_ = write(c, tc.answer)
						return false
					}
					return write(c, okAnswer)
				})
				addrs := []string{bad.addr}
				if two {
					good := startRawRegistry(t, p, func(c net.Conn, _ *http.Request) bool { return write(c, okAnswer) })
					addrs = append(addrs, good.addr)
				}
				w := newWorld(t, p, worldOpts{addrs: addrs, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
				u := w.bridge.client
				u.cfg.Upstreams = badFirst{w.pool, bad.addr} // before any request: no node is connected
				if tc.warm {
					req, _ := http.NewRequest("GET", "https://"+registryName+"/v2/", nil)
					roundTripOK(t, u, req)
				}
				req, _ := http.NewRequest("GET", "https://"+registryName+"/v2/fail", nil)
				resp, err := u.RoundTrip(req)
				if two && err != nil || !two && err == nil {
					t.Fatalf("RoundTrip: %v %v", resp, err)
				}
				if resp != nil {
					_ = resp.Body.Close()
				}
				if n := bad.accepted(); n != 1 {
					t.Errorf("the failing upstream accepted %d connections, want 1", n)
				}
			})
		}
	}
}

// badFirst is a pool whose candidates start with the one at addr.
type badFirst struct {
	*upstream.Pool
	addr string
}

func (b badFirst) Candidates() []*upstream.Host {
	c := b.Pool.Candidates()
	for i, h := range c {
		if h.Addr() == b.addr {
			c[0], c[i] = c[i], c[0]
		}
	}
	return c
}

// TestHTTP1InformationalAnswersReachNode: a 103 Early Hints the registry
// sends before its answer reaches the node (ReverseProxy's
// Got1xxResponse, which the Transport fed), and the final answer follows
// on the same upstream connection.
func TestHTTP1InformationalAnswersReachNode(t *testing.T) {
	p := newTestPKI(t)
	reg := startRawRegistry(t, p, func(c net.Conn, _ *http.Request) bool {
		return write(c, "HTTP/1.1 103 Early Hints\r\nLink: </v2/team/app/blobs/x>; rel=preload\r\n\r\n"+okAnswer)
	})
	w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
	for _, proto := range []string{"http/1.1", "h2"} {
		var hints []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			hints = append(hints, fmt.Sprint(code, " ", h.Get("Link")))
			return nil
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "GET", "https://"+registryName+"/v2/", nil)
		resp, err := w.node(t, proto).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("%s: %d %q, want 200 ok", proto, resp.StatusCode, body)
		}
		if want := "103 </v2/team/app/blobs/x>; rel=preload"; len(hints) != 1 || hints[0] != want {
			t.Errorf("%s: the node got the informational answers %q, want [%q]", proto, hints, want)
		}
	}
	if n := reg.accepted(); n != 1 {
		t.Errorf("the registry accepted %d connections, want 1", n)
	}
}
