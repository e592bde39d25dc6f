package httpbridge

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestH1RefusesMalformedRequests: requests net/http's server refuses get
// its answer (status, text/plain body, Connection: close), never reach
// the handler, are logged once at Debug, and end their connection; a
// legitimate node beside them is served.
func TestH1RefusesMalformedRequests(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		status int
		body   string
	}{
		{name: "not http", raw: "HELLO\r\n\r\n", status: 400, body: "400 Bad Request"},
		{name: "bad header line", raw: "GET / HTTP/1.1\r\nHost: a\r\nno colon\r\n\r\n", status: 400, body: "400 Bad Request"},
		{name: "no host", raw: "GET / HTTP/1.1\r\n\r\n", status: 400, body: "400 Bad Request: missing required Host header"},
		{name: "two hosts", raw: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400, body: "400 Bad Request"},
		{name: "bad host", raw: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", status: 400, body: "400 Bad Request: malformed Host header"},
		{name: "unsupported transfer encoding", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501, body: "Unsupported transfer encoding"},
		{name: "http/2 line", raw: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", status: 505, body: "505 HTTP Version Not Supported: unsupported protocol version"},
		{name: "two content lengths", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", status: 400, body: "400 Bad Request"},
		{name: "headers too large", raw: "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("a", DefaultMaxHeaderBytes+8192) + "\r\n\r\n", status: 431, body: "431 Request Header Fields Too Large"},
		{name: "expectation", raw: "GET / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\n\r\n", status: 417, body: ""},
	}
	served := make(chan *http.Request, 8)
	s := startH1(t, time.Minute, okHandler(served))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, br := s.dial(t)
			resp, body := roundTrip(t, c, br, tc.raw, "GET")
			if resp.StatusCode != tc.status || body != tc.body || !resp.Close {
				t.Errorf("answer %d %q close=%v, want %d %q and Connection: close", resp.StatusCode, body, resp.Close, tc.status, tc.body)
			}
			assertClosed(t, br)
			<-s.ended
			legit, lbr := s.dial(t)
			if resp, body := roundTrip(t, legit, lbr, getOK, "GET"); resp.StatusCode != 200 || body != "ok" {
				t.Errorf("the legitimate node got %d %q", resp.StatusCode, body)
			}
			<-served
		})
	}
	if n := len(s.logs.Lines("level=DEBUG", "malformed http request")); n != len(tests)-1 { // 417 is an answer, not a refusal
		t.Errorf("%d Debug lines for %d refused requests:\n%s", n, len(tests)-1, s.logs.String())
	}
	if len(served) != 0 {
		t.Errorf("the handler saw a refused request: %v", (<-served).URL)
	}
}

// TestH1ReadHeaderTimeoutOnlyWithinARequest: the read header timeout runs
// from a request's first byte: a node that stops halfway through its
// headers is closed (client_error, no request ever completed), while a
// kept-alive connection that waits between requests longer than the
// timeout is not (the idle timer governs that wait). The second node's
// close is what shows the timeout has passed for the first.
func TestH1ReadHeaderTimeoutOnlyWithinARequest(t *testing.T) {
	p := newTestPKI(t)
	up, _ := echoUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, noFirstRequest: true, cfg: Config{ReadHeaderTimeout: 100 * time.Millisecond}})
	kept := dialNode(t, w, "http/1.1")
	kbr := bufio.NewReader(kept)
	get := "GET /v2/ HTTP/1.1\r\nHost: " + registryName + "\r\n\r\n"
	if resp, _ := roundTrip(t, kept, kbr, get, "GET"); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("first answer %d close=%v", resp.StatusCode, resp.Close)
	}
	slow := dialNode(t, w, "http/1.1")
	if _, err := io.WriteString(slow, "GET /v2/ HTTP/1.1\r\nHost: "); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(slow); len(b) != 0 || err != nil {
		t.Fatalf("the slow node read %q, %v, want the connection closed without an answer", b, err)
	}
	w.logs.Wait(t, "msg=connection", "result=client_error")
	if resp, _ := roundTrip(t, kept, kbr, get, "GET"); resp.StatusCode != 200 {
		t.Errorf("the kept-alive node, after the timeout: %d", resp.StatusCode)
	}
}
