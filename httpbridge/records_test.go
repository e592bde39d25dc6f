package httpbridge

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestSmallResponseInOneTLSRecord: a manifest-sized response (headers
// and a 3,000-byte body) reaches the node in one TLS record, that is one
// write system call of the gateway. The bug: the node leg kept
// crypto/tls's dynamic record sizing, which sends the first records of a
// connection in ~1.2 KiB pieces growing by that much per record, so a
// manifest on a fresh connection cost two to three records and as many
// writes (nginx's ssl_buffer_size sends 16 KiB records from the start).
func TestSmallResponseInOneTLSRecord(t *testing.T) {
	p := newTestPKI(t)
	body := make([]byte, 3000)
	up := startUpstream(t, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	}))
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	raw, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	var records atomic.Int64
	c := tls.Client(&recordCounter{Conn: raw, records: &records}, &tls.Config{
		RootCAs: p.ca.Pool(), ServerName: registryName, NextProtos: []string{"http/1.1"},
	})
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	br := bufio.NewReader(c)
	// A HEAD first, so that what the handshake sends after it (the
	// session ticket) is read before counting.
	exchange(t, c, br, http.MethodHead, 0)
	records.Store(0)
	exchange(t, c, br, http.MethodGet, len(body))
	if n := records.Load(); n != 1 {
		t.Errorf("the response came in %d TLS records, want 1 (headers and body together)", n)
	}
}

// exchange sends one request for the manifest on c and reads its answer
// whole, failing unless it is a 200 with a body of want bytes.
func exchange(t *testing.T, c io.Writer, br *bufio.Reader, method string, want int) {
	t.Helper()
	if _, err := fmt.Fprintf(c, "%s /v2/team/app/manifests/v1 HTTP/1.1\r\nHost: %s\r\n\r\n", method, registryName); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || n != int64(want) {
		t.Fatalf("%s: status %d, %d bytes (want %d), %v", method, resp.StatusCode, n, want, err)
	}
}

// TestH2BodyFrameInOneTLSRecord: an HTTP/2 response body reaches the node
// in DATA frames of one TLS record each. The bug: the HTTP/2 server cut
// the proxy's 32 KiB writes into frames of 16 KiB of payload, each one
// 9 bytes over a record's 16 KiB, so every frame took two records and
// two write system calls (a 64 KiB body: 10 records with the headers
// and the empty END_STREAM frame, 6 now).
func TestH2BodyFrameInOneTLSRecord(t *testing.T) {
	const size = 64 << 10
	p := newTestPKI(t)
	up := startUpstream(t, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		_, _ = w.Write(make([]byte, size))
	}))
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	var records atomic.Int64
	node := benchNode(t, w, "h2", true, &records)
	get := func() {
		t.Helper()
		resp, err := node.Get("https://" + registryName + "/v2/team/app/blobs/" + dgst)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || n != size || resp.ProtoMajor != 2 {
			t.Fatalf("status %d, %d bytes, HTTP/%d, %v", resp.StatusCode, n, resp.ProtoMajor, err)
		}
	}
	get() // the connection's SETTINGS and their acknowledgement
	records.Store(0)
	get()
	frames := (size + h2FramePayload - 1) / h2FramePayload
	if n := records.Load(); n > int64(1+frames) {
		t.Errorf("the response came in %d TLS records, want at most %d (HEADERS, then one per DATA frame)", n, 1+frames)
	}
}

// TestH2StreamedBodyNotHeldBack: an HTTP/2 response of unknown length
// that the registry flushes in pieces reaches the node piece by piece:
// gathering frames (h2Frames) never holds back bytes the proxy flushed.
func TestH2StreamedBodyNotHeldBack(t *testing.T) {
	p := newTestPKI(t)
	next := make(chan struct{})
	up := startUpstream(t, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for range 3 {
			_, _ = io.WriteString(w, "piece")
			http.NewResponseController(w).Flush()
			<-next
		}
	}))
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit) // a failure deadline
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+registryName+"/v2/team/app/manifests/v1", nil)
	resp, err := w.node(t, "h2").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 5)
	for i := range 3 {
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "piece" {
			t.Fatalf("piece %d: %q, %v (held back until the registry sends more?)", i, buf, err)
		}
		next <- struct{}{}
	}
}
