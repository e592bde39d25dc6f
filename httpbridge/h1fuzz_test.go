package httpbridge

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// memConn is a node connection that reads a fixed input and keeps what
// is written: the loop's input ends with the node's EOF.
type memConn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (c *memConn) Read(p []byte) (int, error)       { return c.in.Read(p) }
func (c *memConn) Write(p []byte) (int, error)      { return c.out.Write(p) }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzHandler answers by path: reading the body or not, flushing
// (chunked), trailers, a status without a body, an abort.
func fuzzHandler(methods *[]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*methods = append(*methods, r.Method)
		p := r.URL.Path
		if strings.Contains(p, "read") {
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		}
		if strings.Contains(p, "trailer") {
			w.Header().Set("Trailer", "X-T")
		}
		if strings.Contains(p, "204") {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = io.WriteString(w, p)
		if strings.Contains(p, "flush") {
			http.NewResponseController(w).Flush()
			_, _ = io.WriteString(w, strings.Repeat("y", 3*h1PendSize))
		}
		w.Header().Set("X-T", "t")
		if strings.Contains(p, "abort") {
			panic(http.ErrAbortHandler)
		}
	})
}

// FuzzH1Serve: any bytes from a node: the loop never panics, and what it
// answers is a sequence of responses that http.ReadResponse parses, one
// per request the handler saw (interim 100s aside), then at most one
// refusal.
func FuzzH1Serve(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n")) // more in testdata/fuzz/FuzzH1Serve
	log := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, in []byte) {
		var methods []string
		conn := &memConn{in: bytes.NewReader(in)}
		c := newH1Conn(context.Background(), conn, fuzzHandler(&methods), log, "fuzz", time.Minute)
		c.serve()
		c.release()
		br := bufio.NewReader(&conn.out)
		for i := 0; ; i++ {
			if _, err := br.Peek(1); err == io.EOF {
				return
			}
			req := &http.Request{Method: http.MethodGet}
			if i < len(methods) {
				req.Method = methods[i]
			}
			resp, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatalf("answer %d does not parse: %v\nin %q\nout %q", i, err, in, conn.out.Bytes())
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil && i < len(methods) && !bytes.Contains(in, []byte("abort")) {
				t.Fatalf("answer %d's body: %v\nout %q", i, err, conn.out.Bytes())
			}
			if resp.StatusCode == http.StatusContinue {
				i--
			}
		}
	})
}
