package httpbridge

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
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
