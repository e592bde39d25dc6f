package httpbridge

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/testkit"
)

// h1Test is a loopback listener whose connections the HTTP/1.x loop
// serves with a test handler; ended gets one value per connection that
// ended.
type h1Test struct {
	addr  string
	logs  *testkit.LogSink
	ended chan struct{}
}

func startH1(t *testing.T, hdrTimeout time.Duration, h http.Handler) *h1Test {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h1Test{addr: ln.Addr().String(), logs: testkit.NewLogSink(), ended: make(chan struct{}, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.accept(ctx, ln, hdrTimeout, h)
	}()
	t.Cleanup(func() { cancel(); _ = ln.Close(); <-done })
	return s
}

func (s *h1Test) accept(ctx context.Context, ln net.Listener, hdrTimeout time.Duration, h http.Handler) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			c := newH1Conn(ctx, conn, h, s.logs.Logger(), "test", hdrTimeout)
			c.remote = conn.RemoteAddr().String()
			c.serve()
			c.release()
			_ = conn.Close()
			s.ended <- struct{}{}
		}()
	}
}

// dial opens a connection to s with a failure deadline.
func (s *h1Test) dial(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	return c, bufio.NewReader(c)
}

// roundTrip writes raw on c and reads one response to method.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, raw, method string) (*http.Response, string) {
	t.Helper()
	if raw != "" {
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body of the answer to %q: %v", raw, err)
	}
	return resp, string(body)
}

// assertClosed fails unless the server closed c (EOF, nothing more).
func assertClosed(t *testing.T, br *bufio.Reader) {
	t.Helper()
	if b, err := br.ReadByte(); err == nil || !errors.Is(err, io.EOF) && !isConnReset(err) {
		t.Errorf("read %q, %v after the answer, want the connection closed", b, err)
	}
}

const getOK = "GET /ok HTTP/1.1\r\nHost: registry.test\r\n\r\n"

// okHandler answers "ok", and the requests it saw on served.
func okHandler(served chan<- *http.Request) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served != nil {
			served <- r
		}
		_, _ = io.WriteString(w, "ok")
	})
}

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

// framingHandler answers by path, as the response framing cases need.
func framingHandler(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/small": // no Content-Length: computed, Content-Type sniffed
		_, _ = io.WriteString(w, "<html>hi</html>")
	case "/large": // more than the pending buffer: chunked (HTTP/1.0: until the close)
		_, _ = w.Write([]byte(strings.Repeat("x", 3*h1PendSize)))
	case "/length":
		w.Header().Set("Content-Length", "5")
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "hello")
	case "/nocontent":
		w.WriteHeader(http.StatusNoContent)
		if _, err := io.WriteString(w, "body"); !errors.Is(err, http.ErrBodyNotAllowed) {
			panic("a 204 took a body")
		}
	case "/early-hints":
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		_, _ = io.WriteString(w, "final")
	case "/after-writeheader": // changes after WriteHeader are ignored
		w.Header().Set("X-Before", "1")
		w.WriteHeader(http.StatusAccepted)
		w.Header().Set("X-After", "1")
		_, _ = io.WriteString(w, "accepted")
	case "/trailers":
		w.Header().Set("Trailer", "X-Sum")
		_, _ = io.WriteString(w, "data")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "7")
	case "/too-long":
		w.Header().Set("Content-Length", "2")
		if _, err := io.WriteString(w, "abc"); !errors.Is(err, http.ErrContentLength) {
			panic("wrote past the Content-Length")
		}
		_, _ = io.WriteString(w, "ab")
	}
}

// TestH1ResponseFraming: responses are framed as net/http frames them:
// Content-Length computed for a short body without one, chunked for a
// long one (close-delimited for HTTP/1.0), Date and a sniffed
// Content-Type added, no body for HEAD and 204, 1xx sent first, header
// changes after WriteHeader ignored, trailers after the last chunk; each
// over one keep-alive connection where the framing allows it.
func TestH1ResponseFraming(t *testing.T) {
	tests := []struct {
		name, method, path, proto string
		status                    int
		body                      string
		check                     func(*http.Response) string
	}{
		{name: "computed length", method: "GET", path: "/small", status: 200, body: "<html>hi</html>", check: func(r *http.Response) string {
			if r.ContentLength != 15 || r.Header.Get("Content-Type") != "text/html; charset=utf-8" || r.Header.Get("Date") == "" {
				return "want Content-Length 15, the sniffed text/html, a Date"
			}
			return ""
		}},
		{name: "chunked", method: "GET", path: "/large", status: 200, body: strings.Repeat("x", 3*h1PendSize), check: func(r *http.Response) string {
			if len(r.TransferEncoding) != 1 || r.TransferEncoding[0] != "chunked" || r.ContentLength != -1 {
				return "want chunked"
			}
			return ""
		}},
		{name: "declared length", method: "GET", path: "/length", status: 200, body: "hello"},
		{name: "head", method: "HEAD", path: "/length", status: 200, body: "", check: func(r *http.Response) string {
			if r.ContentLength != 5 {
				return "want the Content-Length of the GET"
			}
			return ""
		}},
		{name: "no content", method: "GET", path: "/nocontent", status: 204, body: ""},
		{name: "after WriteHeader", method: "GET", path: "/after-writeheader", status: 202, body: "accepted", check: func(r *http.Response) string {
			if r.Header.Get("X-Before") != "1" || r.Header.Get("X-After") != "" {
				return "want X-Before only"
			}
			return ""
		}},
		{name: "trailers", method: "GET", path: "/trailers", status: 200, body: "data", check: func(r *http.Response) string {
			if r.Trailer.Get("X-Sum") != "42" || r.Trailer.Get("X-Late") != "7" {
				return "want the trailers X-Sum: 42 and X-Late: 7"
			}
			return ""
		}},
		{name: "past the length", method: "GET", path: "/too-long", status: 200, body: "ab"},
	}
	s := startH1(t, time.Minute, http.HandlerFunc(framingHandler))
	c, br := s.dial(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.method + " " + tc.path + " HTTP/1.1\r\nHost: registry.test\r\n\r\n"
			resp, body := roundTrip(t, c, br, raw, tc.method)
			if resp.StatusCode != tc.status || body != tc.body || resp.Close {
				t.Fatalf("%d %q close=%v, want %d %q on a kept connection", resp.StatusCode, body, resp.Close, tc.status, tc.body)
			}
			if tc.check != nil {
				if msg := tc.check(resp); msg != "" {
					t.Errorf("%s; header %v, trailer %v", msg, resp.Header, resp.Trailer)
				}
			}
		})
	}
}

// TestH1InformationalBeforeFinal: WriteHeader(103) sends an interim
// response at once with the header as it was; the final one follows.
func TestH1InformationalBeforeFinal(t *testing.T) {
	s := startH1(t, time.Minute, http.HandlerFunc(framingHandler))
	c, br := s.dial(t)
	if _, err := io.WriteString(c, "GET /early-hints HTTP/1.1\r\nHost: registry.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	tp, err := br.ReadString('\n')
	if err != nil || tp != "HTTP/1.1 103 Early Hints\r\n" {
		t.Fatalf("first line %q, %v, want the 103", tp, err)
	}
	hint, err := http.ReadResponse(bufio.NewReader(strings.NewReader(tp+readUntilBlank(t, br))), nil)
	if err != nil || hint.Header.Get("Link") == "" {
		t.Fatalf("103 %v, %v, want its Link", hint, err)
	}
	resp, body := roundTrip(t, c, br, "", "GET")
	if resp.StatusCode != 200 || body != "final" || resp.Header.Get("Link") != "" {
		t.Errorf("final %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func readUntilBlank(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(line)
		if line == "\r\n" {
			return b.String()
		}
	}
}

// TestH1ConnectionPersistence: HTTP/1.0 closes after the response unless
// the node asked keep-alive (and the length is known); Connection: close
// closes; a pipelined pair on HTTP/1.1 is answered in order.
func TestH1ConnectionPersistence(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		close bool
		body  string
	}{
		{name: "http/1.0", raw: "GET /small HTTP/1.0\r\n\r\n", close: true, body: "<html>hi</html>"},
		{name: "http/1.0 keep-alive", raw: "GET /small HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", body: "<html>hi</html>"},
		{name: "http/1.0 keep-alive, no length", raw: "GET /large HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", close: true, body: strings.Repeat("x", 3*h1PendSize)},
		{name: "connection close", raw: "GET /small HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", close: true, body: "<html>hi</html>"},
		{name: "http/1.1", raw: "GET /small HTTP/1.1\r\nHost: a\r\n\r\n", body: "<html>hi</html>"},
	}
	s := startH1(t, time.Minute, http.HandlerFunc(framingHandler))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, br := s.dial(t)
			resp, body := roundTrip(t, c, br, tc.raw, "GET")
			if body != tc.body || resp.Close != tc.close {
				t.Fatalf("%q close=%v, want %q close=%v", body, resp.Close, tc.body, tc.close)
			}
			if tc.close {
				assertClosed(t, br)
				return
			}
			// The connection serves two more, pipelined.
			if _, err := io.WriteString(c, getOK+strings.Replace(getOK, "/ok", "/length", 1)); err != nil {
				t.Fatal(err)
			}
			if resp, body := roundTrip(t, c, br, "", "GET"); resp.StatusCode != 200 || body != "" {
				t.Errorf("first pipelined: %d %q", resp.StatusCode, body)
			}
			if _, body := roundTrip(t, c, br, "", "GET"); body != "hello" {
				t.Errorf("second pipelined: %q", body)
			}
		})
	}
}

// bodyHandler reads the request body when the path says so, and answers
// with what it read.
func bodyHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/read" {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write(b)
		return
	}
	_, _ = io.WriteString(w, "unread")
}

// TestH1ExpectContinue: a node that sends Expect: 100-continue gets
// "100 Continue" when the handler first reads the body, then the answer;
// one whose body the handler does not read gets no 100 and a response
// that closes the connection (the body was never sent).
func TestH1ExpectContinue(t *testing.T) {
	s := startH1(t, time.Minute, http.HandlerFunc(bodyHandler))
	c, br := s.dial(t)
	if _, err := io.WriteString(c, "PUT /read HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	cont, err := http.ReadResponse(br, nil)
	if err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("interim %v, %v, want 100 Continue", cont, err)
	}
	if resp, body := roundTrip(t, c, br, "data", "PUT"); resp.StatusCode != 200 || body != "data" || resp.Close {
		t.Fatalf("answer %d %q close=%v, want 200 data on a kept connection", resp.StatusCode, body, resp.Close)
	}
	resp, body := roundTrip(t, c, br, "PUT /skip HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n", "PUT")
	if resp.StatusCode != 200 || body != "unread" || !resp.Close {
		t.Errorf("unread: %d %q close=%v, want 200 unread, Connection: close", resp.StatusCode, body, resp.Close)
	}
	assertClosed(t, br)
}

// TestH1UnreadBodyDiscardedUpToLimit: a body the handler left unread is
// dropped to keep the connection when it is short; a longer one
// (MaxUnreadRequestBody) closes the connection after the answer, and the node
// still reads that answer.
func TestH1UnreadBodyDiscardedUpToLimit(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		close bool
	}{
		{name: "short", size: 10 << 10},
		{name: "just under the limit", size: MaxUnreadRequestBody - 1},
		{name: "at the limit", size: MaxUnreadRequestBody, close: true}, // net/http: as much unread as the limit closes
		{name: "too long", size: 4 * MaxUnreadRequestBody, close: true},
	}
	s := startH1(t, time.Minute, http.HandlerFunc(bodyHandler))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, br := s.dial(t)
			req := "POST /skip HTTP/1.1\r\nHost: a\r\nContent-Length: " + strconv.Itoa(tc.size) + "\r\n\r\n"
			sent := make(chan error, 1)
			go func() { // the node sends its whole request, as many do, before reading
				_, err := io.WriteString(c, req+strings.Repeat("b", tc.size))
				sent <- err
			}()
			resp, body := roundTrip(t, c, br, "", "POST")
			if resp.StatusCode != 200 || body != "unread" || resp.Close != tc.close {
				t.Fatalf("%d %q close=%v, want 200 unread close=%v", resp.StatusCode, body, resp.Close, tc.close)
			}
			if tc.close {
				assertClosed(t, br)
				return
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if _, body := roundTrip(t, c, br, getOK, "GET"); body != "unread" {
				t.Errorf("next request on the connection: %q", body)
			}
		})
	}
}

// TestH1HandlerPanicClosesConnection: a handler that panics before its
// answer leaves the node without one and its connection closed; an
// ErrAbortHandler after part of a body cuts the body short; a panic other
// than ErrAbortHandler is logged once with its stack; other nodes are
// served.
func TestH1HandlerPanicClosesConnection(t *testing.T) {
	s := startH1(t, time.Minute, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("handler bug")
		case "/abort":
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, "part")
			panic(http.ErrAbortHandler)
		}
		_, _ = io.WriteString(w, "ok")
	}))
	c, br := s.dial(t)
	if _, err := io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	assertClosed(t, br)
	c, br = s.dial(t)
	if _, err := io.WriteString(c, "GET /abort HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); string(b) != "part" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("aborted body %q, %v, want part and a cut", b, err)
	}
	c, br = s.dial(t)
	if resp, body := roundTrip(t, c, br, getOK, "GET"); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("another node: %d %q", resp.StatusCode, body)
	}
	if lines := s.logs.Lines("panic serving an http request"); len(lines) != 1 || !strings.Contains(lines[0], "handler bug") || !strings.Contains(lines[0], "goroutine") {
		t.Errorf("panic log lines %q, want one with the value and the stack", lines)
	}
}

// TestH1FlushSendsAtOnce: Flush sends the header and what is written
// while the handler still runs (a streamed response, chunked), as
// ReverseProxy needs for a body of unknown length.
func TestH1FlushSendsAtOnce(t *testing.T) {
	release := make(chan struct{})
	s := startH1(t, time.Minute, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first,")
		if err := http.NewResponseController(w).Flush(); err != nil {
			panic(err)
		}
		<-release
		_, _ = io.WriteString(w, "second")
	}))
	c, br := s.dial(t)
	if _, err := io.WriteString(c, getOK); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("first,"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first," {
		t.Fatalf("streamed %q, %v", first, err)
	}
	close(release)
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != "second" || resp.ContentLength != -1 {
		t.Errorf("rest %q, %v, length %d, want second, chunked", rest, err, resp.ContentLength)
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
