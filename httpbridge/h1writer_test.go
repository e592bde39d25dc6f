package httpbridge

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// framingHandler answers by path, as the response framing cases need.
func framingHandler(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/readfrom-") {
		readFromHandler(w, r)
		return
	}
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

// readFromHandler answers by path through the writer's ReadFrom.
func readFromHandler(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/readfrom-length": // straight into the connection's buffer, over several flushes
		w.Header().Set("Content-Length", strconv.Itoa(len(readFromBody)))
		w.Header().Set("Content-Type", "application/octet-stream")
		if n, err := w.(io.ReaderFrom).ReadFrom(strings.NewReader(readFromBody)); err != nil || n != int64(len(readFromBody)) {
			panic(fmt.Sprintf("ReadFrom copied %d, %v", n, err))
		}
	case "/readfrom-too-long":
		w.Header().Set("Content-Length", "3")
		w.Header().Set("Content-Type", "text/plain")
		if _, err := w.(io.ReaderFrom).ReadFrom(strings.NewReader("abcd")); !errors.Is(err, http.ErrContentLength) {
			panic("ReadFrom copied past the Content-Length")
		}
	case "/readfrom-chunked": // no length: through Write, chunked
		_, _ = w.(io.ReaderFrom).ReadFrom(strings.NewReader(strings.Repeat("y", 3*h1PendSize)))
	case "/readfrom-sniffed": // a length but no Content-Type: through Write, sniffed
		w.Header().Set("Content-Length", "15")
		_, _ = w.(io.ReaderFrom).ReadFrom(strings.NewReader("<html>hi</html>"))
	case "/readfrom-upstream-fails": // the source fails mid-body: returned, the node's connection closes
		w.Header().Set("Content-Length", "10")
		w.Header().Set("Content-Type", "text/plain")
		src := io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errUpstreamBroke))
		if _, err := w.(io.ReaderFrom).ReadFrom(src); !errors.Is(err, errUpstreamBroke) {
			panic(fmt.Sprintf("ReadFrom returned %v, want the source's error", err))
		}
	}
}

// framingCase is a request to framingHandler and the answer it gets.
type framingCase struct {
	name, method, path string
	status             int
	body               string
	check              func(*http.Response) string
}

var framingCases = []framingCase{
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
	{name: "ReadFrom, declared length", method: "GET", path: "/readfrom-length", status: 200, body: readFromBody},
	{name: "ReadFrom past the length", method: "GET", path: "/readfrom-too-long", status: 200, body: "abc"},
	{name: "ReadFrom, no length", method: "GET", path: "/readfrom-chunked", status: 200, body: strings.Repeat("y", 3*h1PendSize), check: func(r *http.Response) string {
		if len(r.TransferEncoding) != 1 || r.ContentLength != -1 {
			return "want chunked"
		}
		return ""
	}},
	{name: "ReadFrom, type sniffed", method: "GET", path: "/readfrom-sniffed", status: 200, body: "<html>hi</html>", check: func(r *http.Response) string {
		if r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			return "want the sniffed text/html"
		}
		return ""
	}},
}

// TestH1ResponseFraming: responses are framed as net/http frames them
// (framingCases): Content-Length computed for a short body without one,
// chunked for a long one (close-delimited for HTTP/1.0), Date and a
// sniffed Content-Type added, no body for HEAD and 204, 1xx sent first,
// header changes after WriteHeader ignored, trailers after the last
// chunk, ReadFrom's straight copy within the declared length; each over
// one keep-alive connection where the framing allows it.
func TestH1ResponseFraming(t *testing.T) {
	s := startH1(t, time.Minute, http.HandlerFunc(framingHandler))
	c, br := s.dial(t)
	for _, tc := range framingCases {
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

// readFromBody spans several of the connection's write buffers.
var readFromBody = strings.Repeat("0123456789abcdef", 2*h1WriterSize/16+100)

var errUpstreamBroke = errors.New("upstream broke")

// TestH1ReadFromSourceFails: a source failing mid-body ends ReadFrom
// with its error; the node gets what was read, short of the declared
// length, and the connection closes (nothing else tells where the body
// would have ended).
func TestH1ReadFromSourceFails(t *testing.T) {
	s := startH1(t, time.Minute, http.HandlerFunc(framingHandler))
	c, br := s.dial(t)
	if _, err := io.WriteString(c, "GET /readfrom-upstream-fails HTTP/1.1\r\nHost: registry.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if string(body) != "abc" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("body %q, %v; want abc cut short by the close", body, err)
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
