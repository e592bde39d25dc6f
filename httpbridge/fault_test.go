package httpbridge

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/snigate/snigate/internal/testnet"
	"github.com/snigate/snigate/oci"
)

// noLeaks fails tb if a goroutine started during the test outlives it
// (registered first, so it runs after every other cleanup).
func noLeaks(tb testing.TB) {
	opt := goleak.IgnoreCurrent()
	tb.Cleanup(func() { goleak.VerifyNone(tb, opt) })
}

func ociCode(tb testing.TB, body string) string {
	tb.Helper()
	var eb oci.ErrorBody
	if err := json.Unmarshal([]byte(body), &eb); err != nil || len(eb.Errors) != 1 {
		tb.Fatalf("body %q is not one OCI error (%v)", body, err)
	}
	return eb.Errors[0].Code
}

// TestRetryOnDeadUpstream: a GET whose first candidate refuses the
// connection is answered by the next one; the dead host is reported to
// the pool (down after fall failures) and the retry counted.
func TestRetryOnDeadUpstream(t *testing.T) {
	p := newTestPKI(t)
	up, seen := echoUpstream(t, p)
	dead := testnet.ClosedAddr(t)
	w := newWorld(t, p, worldOpts{addrs: []string{dead, up.addr}})
	resp, body := do(t, w.node(t, "h2"), "GET", "/v2/team/app/manifests/v1", nil)
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q, want the live upstream's 200", resp.StatusCode, body)
	}
	if len(seen.all()) != 1 {
		t.Errorf("live upstream saw %d requests, want 1", len(seen.all()))
	}
	if rec := w.audit.wait(t, 1)[0]; rec.Upstream != up.addr || rec.Status != 200 {
		t.Errorf("audit %+v, want upstream %s, status 200", rec, up.addr)
	}
	if got := testutil.ToFloat64(w.m.retries.WithLabelValues("registry")); got != 1 {
		t.Errorf("retries = %v, want 1", got)
	}
	if c := w.pool.Candidates(); len(c) != 1 || c[0].Addr() != up.addr {
		t.Errorf("candidates after the failure: %v, want only %s (passive health)", c, up.addr)
	}
}

// TestNoRetryWithBody: a request with a body is not sent twice: the
// first candidate's failure is the answer (502).
func TestNoRetryWithBody(t *testing.T) {
	p := newTestPKI(t)
	up, seen := echoUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{testnet.ClosedAddr(t), up.addr}, cfg: Config{Methods: []string{"GET", "HEAD", "POST"}}})
	req, _ := http.NewRequest("POST", "https://"+registryName+"/v2/team/app/blobs/uploads/", strings.NewReader("data"))
	resp, err := w.node(t, "h2").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || ociCode(t, string(body)) != "UNAVAILABLE" {
		t.Errorf("got %d %s, want 502 UNAVAILABLE", resp.StatusCode, body)
	}
	if len(seen.all()) != 0 {
		t.Errorf("second upstream saw the request; a request with a body must not be retried")
	}
}

// TestAllUpstreamsDown: when every upstream fails the node gets 502 with
// an OCI error body, and once they are all down 503, at once.
func TestAllUpstreamsDown(t *testing.T) {
	p := newTestPKI(t)
	w := newWorld(t, p, worldOpts{addrs: []string{testnet.ClosedAddr(t), testnet.ClosedAddr(t)}})
	node := w.node(t, "http/1.1")
	resp, body := do(t, node, "GET", "/v2/", nil)
	if resp.StatusCode != 502 || ociCode(t, body) != "UNAVAILABLE" || !strings.Contains(body, "2 of 2 upstreams tried") {
		t.Errorf("got %d %s, want 502 UNAVAILABLE naming both attempts", resp.StatusCode, body)
	}
	resp, body = do(t, node, "GET", "/v2/", nil)
	if resp.StatusCode != 503 || ociCode(t, body) != "UNAVAILABLE" || !strings.Contains(body, "no healthy upstream") {
		t.Errorf("got %d %s, want 503 UNAVAILABLE: no healthy upstream", resp.StatusCode, body)
	}
	recs := w.audit.wait(t, 2)
	if recs[0].Status != 502 || recs[1].Status != 503 || recs[1].Error == "" {
		t.Errorf("audit %+v, want 502 then 503 with errors", recs)
	}
}

// TestBlackHoleUpstream: an upstream that accepts TCP and never answers
// the handshake costs ConnectTimeout, then the node gets 502.
func TestBlackHoleUpstream(t *testing.T) {
	p := newTestPKI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(held)
		for c := range held {
			c.Close()
		}
	})
	w := newWorld(t, p, worldOpts{addrs: []string{ln.Addr().String()}, cfg: Config{ConnectTimeout: 100 * time.Millisecond}})
	resp, body := do(t, w.node(t, "h2"), "GET", "/v2/", nil)
	if resp.StatusCode != 502 || !strings.Contains(body, "timeouts.connect exceeded") {
		t.Errorf("got %d %s, want 502 naming timeouts.connect", resp.StatusCode, body)
	}
}

// TestUpstreamDiesMidBlob: the registry fails after part of a blob; the
// node's read fails (HTTP/1.1: the connection closes before
// Content-Length; HTTP/2: the stream is reset), never a short 200 read
// as complete, and the audit record says what happened.
func TestUpstreamDiesMidBlob(t *testing.T) {
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			p := newTestPKI(t)
			up := startUpstream(t, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "1048576")
				_, _ = w.Write(bytes.Repeat([]byte("x"), 100<<10))
				http.NewResponseController(w).Flush()
				panic(http.ErrAbortHandler)
			}))
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
			resp, err := w.node(t, proto).Get("https://" + registryName + "/v2/team/app/blobs/" + dgst)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil || n >= 1<<20 {
				t.Fatalf("node read %d bytes with error %v, want a failed read", n, err)
			}
			rec := w.audit.wait(t, 1)[0]
			if rec.Status != 200 || rec.Error == "" || rec.Bytes >= 1<<20 || rec.Digest != dgst || rec.Kind != oci.KindBlob {
				t.Errorf("audit %+v, want status 200, the blob's digest, an error and a short byte count", rec)
			}
			if proto == "http/1.1" {
				w.logs.Wait(t, "msg=connection", "result=upstream_error")
			}
		})
	}
}

// TestSlowUpstream: a blob the registry is slow to send does not hold up
// other requests on the same node connection, and arrives whole.
func TestSlowUpstream(t *testing.T) {
	p := newTestPKI(t)
	release := make(chan struct{})
	started := make(chan struct{})
	up := startUpstream(t, p.upstreamTLS("h2"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") {
			_, _ = w.Write([]byte("first half,"))
			http.NewResponseController(w).Flush()
			close(started)
			<-release
			_, _ = w.Write([]byte("second half"))
			return
		}
		_, _ = io.WriteString(w, "manifest")
	}))
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	node := w.node(t, "h2")
	type result struct {
		body string
		err  error
	}
	blob := make(chan result, 1)
	go func() {
		resp, err := node.Get("https://" + registryName + "/v2/team/app/blobs/" + dgst)
		if err != nil {
			blob <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		blob <- result{string(b), err}
	}()
	<-started
	if resp, body := do(t, node, "GET", "/v2/team/app/manifests/v1", nil); resp.StatusCode != 200 || body != "manifest" {
		t.Errorf("manifest beside a slow blob: %d %q", resp.StatusCode, body)
	}
	close(release)
	if r := <-blob; r.err != nil || r.body != "first half,second half" {
		t.Errorf("slow blob: %q, %v", r.body, r.err)
	}
}

// TestNodeDisconnectCancelsUpstream: a node that goes away mid-download
// cancels the upstream request, and no goroutine is left behind.
func TestNodeDisconnectCancelsUpstream(t *testing.T) {
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			noLeaks(t)
			p := newTestPKI(t)
			cancelled := make(chan struct{})
			up := startUpstream(t, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				chunk := bytes.Repeat([]byte("y"), 32<<10)
				for {
					if _, err := w.Write(chunk); err != nil {
						break
					}
				}
				<-r.Context().Done()
				close(cancelled)
			}))
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
			node := w.node(t, proto)
			resp, err := node.Get("https://" + registryName + "/v2/team/app/blobs/" + dgst)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(resp.Body, make([]byte, 256<<10)); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			node.CloseIdleConnections()
			select {
			case <-cancelled:
			case <-time.After(waitLimit):
				t.Fatal("the upstream request was not cancelled")
			}
			rec := w.audit.wait(t, 1)[0]
			if rec.Error == "" {
				t.Errorf("audit %+v, want the node's departure as the error", rec)
			}
		})
	}
}

func counter(tb testing.TB, c interface{ Desc() *prometheus.Desc }) float64 {
	tb.Helper()
	return testutil.ToFloat64(c.(prometheus.Collector))
}

// TestHungUpstreamRetried: an upstream that takes the request and never
// answers costs ResponseHeaderTimeout, then the GET goes to the next one.
func TestHungUpstreamRetried(t *testing.T) {
	p := newTestPKI(t)
	hang := make(chan struct{})
	hung := startUpstream(t, p.upstreamTLS("h2"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang) })
	up, _ := echoUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{hung.addr, up.addr}, cfg: Config{ResponseHeaderTimeout: 100 * time.Millisecond}})
	resp, body := do(t, w.node(t, "h2"), "GET", "/v2/", nil)
	if resp.StatusCode != 200 || body != "ok" {
		t.Errorf("got %d %q, want the second upstream's answer", resp.StatusCode, body)
	}
	if rec := w.audit.wait(t, 1)[0]; rec.Upstream != up.addr {
		t.Errorf("audit upstream %s, want %s", rec.Upstream, up.addr)
	}
}
