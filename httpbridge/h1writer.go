package httpbridge

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"
)

// h1PendSize is the most body bytes an HTTP/1.1 response without a
// Content-Length holds before its header goes out: a handler that ends
// having written no more gets its Content-Length computed, a longer one
// is sent chunked (net/http's bufferBeforeChunkingSize).
const h1PendSize = 2 << 10

// h1Writer is the http.ResponseWriter of one HTTP/1.x node request; one
// per connection, reset between requests. The header is taken as
// serialized bytes at WriteHeader (later changes of the map are ignored,
// as net/http does) and goes out with the first body bytes, so that a
// small response is one write. It writes through net/http's own header
// writer and httputil's chunked writer.
type h1Writer struct {
	conn *h1Conn
	req  *http.Request
	bw   *bufio.Writer // the connection's, taken at the response's first byte
	head bool          // a HEAD request: no body bytes

	header      http.Header
	wroteHeader bool
	committed   bool // the status line and header are in bw
	status      int
	snap        bytes.Buffer // the handler's header as WriteHeader found it
	clen        int64        // the declared Content-Length, -1 when none
	te          string       // the handler's Transfer-Encoding
	hasType     bool         // the handler set Content-Type or Content-Encoding
	hasDate     bool
	trailers    []string // the declared trailer names
	prefixed    bool     // the header has http.TrailerPrefix keys
	closeAfter  bool     // the connection closes after this response
	chunked     bool
	done        bool // the handler returned
	written     int64
	pend        []byte // body bytes before the header went out
	err         error  // the first write error
	line        [64]byte
	src         source // ReadFrom's
}

var _ http.ResponseWriter = (*h1Writer)(nil)

// reset prepares w for the request r, keeping its buffers.
func (w *h1Writer) reset(c *h1Conn, r *http.Request) {
	clear(w.header)
	if w.header == nil {
		w.header = make(http.Header)
	}
	w.snap.Reset()
	*w = h1Writer{
		conn: c, req: r, head: r.Method == http.MethodHead, header: w.header, snap: w.snap,
		clen: -1, trailers: w.trailers[:0], pend: w.pend[:0], closeAfter: r.Close,
	}
}

func (w *h1Writer) Header() http.Header { return w.header }

// WriteHeader takes the status and a snapshot of the header. A 1xx
// status other than 101 is sent at once as an informational response.
func (w *h1Writer) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http
	}
	if w.wroteHeader {
		w.conn.log.Debug("http: superfluous WriteHeader call", "route", w.conn.route, "status", code)
		return
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.informational(code)
		return
	}
	w.conn.cont.disable()
	w.wroteHeader, w.status = true, code
	w.takeHeader()
}

// informational sends a 1xx response now with the header as it is.
func (w *h1Writer) informational(code int) {
	w.conn.cont.locked(func() {
		bw := w.writer()
		_, _ = bw.Write(w.statusLine(code))
		_ = w.header.WriteSubset(bw, excludeNoBody)
		_, _ = bw.WriteString("\r\n")
		w.fail(bw.Flush())
	})
}

// takeHeader records what the response's framing depends on and
// serializes the rest of the header with net/http's writer.
func (w *h1Writer) takeHeader() {
	h := w.header
	if cl := h.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.clen = v
		} else {
			w.conn.log.Debug("http: invalid Content-Length of a response dropped", "route", w.conn.route, "content_length", bound(cl, MaxAuditField))
		}
	}
	w.te = h.Get("Transfer-Encoding")
	_, ct := h["Content-Type"]
	w.hasType = ct || h.Get("Content-Encoding") != ""
	_, w.hasDate = h["Date"]
	if strings.Contains(h.Get("Connection"), "close") {
		w.closeAfter = true
	}
	for _, v := range h["Trailer"] {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				w.trailers = append(w.trailers, http.CanonicalHeaderKey(f))
			}
		}
	}
	exclude := excludeBody
	if !bodyAllowed(w.status) {
		exclude = excludeFor(w.status)
	}
	exclude = w.withPrefixed(exclude)
	_ = h.WriteSubset(&w.snap, exclude)
}

// withPrefixed adds the header's http.TrailerPrefix keys (trailers not
// announced, sent at the end) to exclude.
func (w *h1Writer) withPrefixed(exclude map[string]bool) map[string]bool {
	for k := range w.header {
		if !strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		if !w.prefixed {
			w.prefixed = true
			exclude = cloneSet(exclude)
		}
		exclude[k] = true
	}
	return exclude
}

func (w *h1Writer) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.clen >= 0 && w.written+int64(len(p)) > w.clen && !w.head {
		return 0, http.ErrContentLength
	}
	if !w.committed {
		if w.clen < 0 && len(w.pend)+len(p) <= h1PendSize {
			w.pend = append(w.pend, p...)
			return len(p), nil
		}
		w.commit(p)
	}
	return w.body(p)
}

// body sends p in the response's framing.
func (w *h1Writer) body(p []byte) (int, error) {
	w.written += int64(len(p))
	switch {
	case w.head || len(p) == 0:
		return len(p), nil
	case w.chunked:
		n, err := w.conn.chunks.Write(p)
		w.fail(err)
		return n, err
	}
	n, err := w.bw.Write(p)
	w.fail(err)
	return n, err
}

// commit writes the status line and header into the connection's
// buffer, then what is pending; first is the first body bytes (for the
// sniffed Content-Type). At the handler's end the length is known.
func (w *h1Writer) commit(first []byte) {
	w.committed = true
	if len(w.pend) > 0 {
		first = w.pend
	}
	w.conn.settleBody(w)
	bw := w.writer()
	_, _ = bw.Write(w.statusLine(w.status))
	_, _ = bw.Write(w.snap.Bytes())
	w.framing(bw, first)
	if !w.hasDate {
		_, _ = bw.WriteString("Date: ")
		_, _ = bw.Write(time.Now().UTC().AppendFormat(w.line[:0], http.TimeFormat))
		_, _ = bw.WriteString("\r\n")
	}
	_, _ = bw.WriteString("\r\n")
	if pend := w.pend; len(pend) > 0 {
		w.pend = pend[:0]
		_, _ = w.body(pend)
	}
}

// framing decides and writes the header lines of the body's framing:
// Content-Type (sniffed), Content-Length, Transfer-Encoding, Connection.
func (w *h1Writer) framing(bw *bufio.Writer, first []byte) {
	allowed := bodyAllowed(w.status)
	if allowed && !w.hasType && w.te == "" && len(first) > 0 {
		w.headerLine(bw, "Content-Type", http.DetectContentType(first))
	}
	trailers := len(w.trailers) > 0 || w.prefixed
	if w.done && w.clen < 0 && !trailers && w.te == "" && allowed && (!w.head || len(w.pend) > 0) {
		w.clen = int64(len(w.pend))
	}
	if w.clen >= 0 && w.te != "" && w.te != "identity" {
		w.clen = -1 // not both: chunked wins, as net/http
	}
	switch {
	case !allowed:
		w.clen = -1
	case w.clen >= 0:
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.Write(strconv.AppendInt(w.line[:0], w.clen, 10))
		_, _ = bw.WriteString("\r\n")
	case w.head:
	case w.req.ProtoAtLeast(1, 1) && w.te != "identity":
		w.chunked = true
		w.conn.chunks.reset(bw)
		w.headerLine(bw, "Transfer-Encoding", "chunked")
	default: // HTTP/1.0 or identity: the close ends the body
		w.closeAfter = true
	}
	w.connection(bw)
}

// connection writes the Connection header: close when the connection
// ends after this response, keep-alive for an HTTP/1.0 node that asked.
func (w *h1Writer) connection(bw *bufio.Writer) {
	if w.conn.closing() {
		w.closeAfter = true
	}
	switch {
	case w.closeAfter && w.req.ProtoAtLeast(1, 1):
		w.headerLine(bw, "Connection", "close")
	case !w.closeAfter && !w.req.ProtoAtLeast(1, 1):
		if w.clen < 0 && bodyAllowed(w.status) && !w.head {
			w.closeAfter = true // no length: the close ends the body
			return
		}
		w.headerLine(bw, "Connection", "keep-alive")
	}
}

func (w *h1Writer) headerLine(bw *bufio.Writer, k, v string) {
	_, _ = bw.WriteString(k)
	_, _ = bw.WriteString(": ")
	_, _ = bw.WriteString(v)
	_, _ = bw.WriteString("\r\n")
}

// statusLine is the response's status line, in w.line.
func (w *h1Writer) statusLine(code int) []byte {
	b := append(w.line[:0], "HTTP/1.1 "...)
	if !w.req.ProtoAtLeast(1, 1) {
		b = append(w.line[:0], "HTTP/1.0 "...)
	}
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	if text := http.StatusText(code); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	return append(b, "\r\n"...)
}

// FlushError sends the header and what is written so far to the node.
func (w *h1Writer) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(nil)
	}
	w.fail(w.bw.Flush())
	return w.err
}

// Flush is http.Flusher's: FlushError without the error.
func (w *h1Writer) Flush() { _ = w.FlushError() }

// finish completes the response after the handler returned: the header
// if it has not gone out, the last chunk and the trailers, the flush.
func (w *h1Writer) finish() {
	w.done = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(nil)
	}
	if w.chunked {
		w.fail(w.conn.chunks.Close())
		w.writeTrailers()
		_, _ = w.bw.WriteString("\r\n")
	}
	if w.clen >= 0 && w.written != w.clen && !w.head {
		w.closeAfter = true // the node cannot tell where the body ends
	}
	w.fail(w.bw.Flush())
}

// writeTrailers writes the declared trailers and the prefixed ones (also
// those set after the header went out, as net/http), as the handler left
// them in the header map.
func (w *h1Writer) writeTrailers() {
	for _, k := range w.trailers {
		for _, v := range w.header[k] {
			w.headerLine(w.bw, k, trailerValue(v))
		}
	}
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && name != "" {
			for _, v := range vv {
				w.headerLine(w.bw, http.CanonicalHeaderKey(name), trailerValue(v))
			}
		}
	}
}

// trailerValue is v safe to send: no line breaks (net/http's header
// writer replaces them the same way).
func trailerValue(v string) string {
	if strings.ContainsAny(v, "\r\n") {
		v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
	}
	return strings.TrimSpace(v)
}

// writer is the connection's buffered writer, taken from the pool at
// the response's first byte.
func (w *h1Writer) writer() *bufio.Writer {
	if w.bw == nil {
		w.bw = w.conn.writer()
	}
	return w.bw
}

func (w *h1Writer) fail(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

// bodyAllowed reports whether a response of status may have a body
// (not 1xx, 204, 304).
func bodyAllowed(status int) bool {
	return (status < 100 || status > 199) && status != http.StatusNoContent && status != http.StatusNotModified
}

// The header keys the writer sets itself, never the handler's.
var (
	excludeBody   = map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Connection": true}
	excludeNoBody = map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Connection": true}
	exclude304    = map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Content-Type": true}
)

// excludeFor is the exclusion of a bodyless status: a 304 has no
// Content-Type either (net/http's suppressedHeaders).
func excludeFor(status int) map[string]bool {
	if status == http.StatusNotModified {
		return exclude304
	}
	return excludeNoBody
}

func cloneSet(m map[string]bool) map[string]bool {
	c := make(map[string]bool, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

// chunkWriter is httputil's chunked writer over the connection's buffer,
// kept per connection.
type chunkWriter struct {
	io.WriteCloser
	to *bufio.Writer
}

func (c *chunkWriter) reset(bw *bufio.Writer) {
	if c.to != bw || c.WriteCloser == nil {
		c.WriteCloser, c.to = httputil.NewChunkedWriter(bw), bw
	}
}

// ReadFrom copies src into the response (io.Copy finds it, as it finds
// net/http's). A body of a declared length goes from src straight into
// the connection's write buffer (bufio.Writer.ReadFrom), which goes out
// in full records as it fills: no copy buffer is held, and no byte is
// copied twice. Any other body (chunked, a length still to be computed,
// HEAD, a Content-Type to sniff, a bodyless status) goes through Write.
// As with Write, bytes beyond the declared length are
// http.ErrContentLength.
func (w *h1Writer) ReadFrom(src io.Reader) (int64, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed && w.clen >= 0 && w.hasType && w.te == "" && !w.head && bodyAllowed(w.status) && w.err == nil {
		w.commit(nil)
	}
	if !w.committed || w.chunked || w.head || w.clen < 0 || w.err != nil {
		return copyThrough(w, src)
	}
	s := &w.src // a field: no allocation per copy
	*s = source{r: src, left: w.clen - w.written}
	n, err := w.bw.ReadFrom(s)
	s.r = nil
	w.written += n
	switch {
	case s.err != nil:
		return n, s.err
	case err != nil:
		w.fail(err)
		return n, err
	case s.left == 0:
		if k, rerr := src.Read(w.line[:1]); k > 0 { // w.line: no allocation for the byte
			return n, http.ErrContentLength
		} else if rerr != nil && rerr != io.EOF {
			return n, rerr
		}
	}
	return n, nil
}
