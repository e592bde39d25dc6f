package httpbridge

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/snigate/snigate/oci"
)

// bodyUpstream reads each request's body whole and answers 201 with its
// length; it records the requests that reached it and their bodies.
type bodyUpstream struct {
	mu     sync.Mutex
	paths  []string
	bodies []string
}

func (u *bodyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	u.mu.Lock()
	u.paths = append(u.paths, r.URL.Path)
	u.bodies = append(u.bodies, string(b))
	u.mu.Unlock()
	if err != nil {
		return
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, strconv.Itoa(len(b)))
}

func (u *bodyUpstream) seen() (int, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.paths), append([]string(nil), u.bodies...)
}

// rawRequest writes req on a new HTTP/1.1 TLS connection to the gateway
// (closing its write side when closeWrite), and reads the answer.
func (w *world) rawRequest(t *testing.T, req string, closeWrite bool) (*http.Response, string) {
	t.Helper()
	c, err := tls.Dial("tcp", w.addr, &tls.Config{RootCAs: w.pki.ca.Pool(), ServerName: registryName, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		if err := c.CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestMalformedChunkedBodyGets400BeforeUpstream: a chunked request body
// with malformed framing (a bad chunk size, a chunk without its CRLF, a
// body cut short) gets 400 with an OCI error, and the registry never sees
// the request; a well-formed one reaches it whole. A body longer than
// DefaultChunkedPreread streams, and malformed framing past it gets 400,
// not 502.
func TestMalformedChunkedBodyGets400BeforeUpstream(t *testing.T) {
	p := newTestPKI(t)
	bu := &bodyUpstream{}
	up := startUpstream(t, p.upstreamTLS("h2"), bu)
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Methods: []string{"PATCH"}}})
	head := "PATCH /v2/team/app/blobs/uploads/abc HTTP/1.1\r\nHost: " + registryName + "\r\nTransfer-Encoding: chunked\r\n\r\n"
	big := strings.Repeat("x", DefaultChunkedPreread+1)
	bigChunk := fmt.Sprintf("%x\r\n%s\r\n", len(big), big)
	tests := []struct {
		name, body string
		closeWrite bool
		status     int
		upstream   int    // requests the registry saw; -1: it may have seen the headers
		got        string // the body it read
	}{
		{name: "bad chunk size", body: "zz\r\nhello\r\n0\r\n\r\n", status: 400},
		{name: "chunk without its CRLF", body: "5\r\nhelloXX0\r\n\r\n", status: 400},
		{name: "chunk size overflows", body: "fffffffffffffffff\r\nhello\r\n0\r\n\r\n", status: 400},
		{name: "cut short", body: "5\r\nhel", closeWrite: true, status: 400},
		{name: "well formed", body: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", status: 201, upstream: 1, got: "hello world"},
		{name: "long and well formed", body: bigChunk + "0\r\n\r\n", status: 201, upstream: 1, got: big},
		{name: "long, malformed past the preread", body: bigChunk + "zz\r\n", status: 400, upstream: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := bu.seen()
			resp, body := w.rawRequest(t, head+tt.body, tt.closeWrite)
			var eb oci.ErrorBody
			if resp.StatusCode != tt.status || tt.status == 400 && (json.Unmarshal([]byte(body), &eb) != nil || len(eb.Errors) != 1) {
				t.Fatalf("status %d body %q, want %d (an OCI error body for 400)", resp.StatusCode, body, tt.status)
			}
			n, bodies := bu.seen()
			if tt.upstream >= 0 && n-before != tt.upstream {
				t.Fatalf("the registry saw %d requests, want %d", n-before, tt.upstream)
			}
			if tt.got != "" && bodies[n-1] != tt.got {
				t.Errorf("the registry read a body of %d bytes, want %d", len(bodies[n-1]), len(tt.got))
			}
		})
	}
}
