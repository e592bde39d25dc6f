package httpbridge

import (
	"bufio"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"
)

// h1ReaderSize and h1WriterSize are the buffers of an HTTP/1.x node
// connection (h1Readers also serves the upstream connections'). The
// writer holds a TLS record's worth, so that a response of up to 16 KiB
// with its header is one write; it is the connection's only while a
// response goes out.
const (
	h1ReaderSize = 4 << 10
	h1WriterSize = 16 << 10
)

var (
	h1Readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, h1ReaderSize) }}
	h1Writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, h1WriterSize) }}
)

// h1Server is what the requests' contexts carry under
// http.ServerContextKey, as net/http's server sets it, for handlers
// written for that server: only its presence is read (httputil's
// ReverseProxy, for one, aborts a failed body copy only under a server).
var h1Server = new(http.Server)

// aLongTimeAgo is a read deadline in the past: it unblocks a pending
// read, and makes a new one return at once (both legs).
var aLongTimeAgo = time.Unix(1, 0)

// h1Conn serves HTTP/1.x on one node connection in the connection's own
// goroutine: net/http's parsers (http.ReadRequest, http.Header's writer,
// httputil's chunked writer), our connection loop. Requests are read one
// at a time; there is no background read, so a node that leaves while
// its request waits for the upstream is noticed when the answer is
// written.
type h1Conn struct {
	conn       net.Conn
	handler    http.Handler
	log        *slog.Logger
	route      string
	hdrTimeout time.Duration // ReadHeaderTimeout
	ctx        context.Context
	remote     string               // the requests' RemoteAddr
	tls        *tls.ConnectionState // the requests' TLS; nil on a plain connection

	lr      h1Limit
	br      *bufio.Reader
	bw      *bufio.Writer // while a response goes out, else nil
	w       h1Writer
	chunks  chunkWriter
	cont    h1Continue
	body    *h1Body // the current request's, nil without a body
	lastPut bool    // the last request was a POST or a PUT (leading CRLF tolerated)
	linger  bool    // the node may still be sending: wait for its close before closing

	mu       sync.Mutex
	idle     bool // waiting for the first byte of a request
	draining bool // close at the next request boundary
}

// serveH1 serves HTTP/1.x (ALPN http/1.1 or none) until the connection
// ends, drains, or a request asks to close it.
func (b *Bridge) serveH1(ctx context.Context, nc *nodeConn) {
	c := newH1Conn(ctx, nc, b, b.log, b.cfg.Route, b.cfg.ReadHeaderTimeout)
	state := nc.ConnectionState()
	c.tls = &state
	c.remote = clientString(nc)
	defer c.release()
	nc.arm(c.drain) // closes the connection if idle, else after the answer
	c.serve()
}

func newH1Conn(ctx context.Context, conn net.Conn, h http.Handler, log *slog.Logger, route string, hdrTimeout time.Duration) *h1Conn {
	ctx = context.WithValue(ctx, http.ServerContextKey, h1Server)
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, conn.LocalAddr())
	c := &h1Conn{conn: conn, handler: h, log: log, route: route, hdrTimeout: hdrTimeout, ctx: ctx}
	c.lr.r = conn
	c.br = h1Readers.Get().(*bufio.Reader)
	c.br.Reset(&c.lr)
	c.cont.c = c
	return c
}

// release returns the buffers to their pools.
func (c *h1Conn) release() {
	c.releaseWriter()
	c.br.Reset(nil)
	h1Readers.Put(c.br)
	c.br = nil
}

// serve is the connection loop: wait for a request, read it, serve it.
func (c *h1Conn) serve() {
	for first := true; ; first = false {
		if !c.await(first) {
			return
		}
		req, ok := c.readRequest()
		if !ok || !c.serveRequest(req) {
			c.closeOut()
			return
		}
	}
}

// await waits for the first byte of the next request, false when the
// connection ends first (the node closed it, a drain, a deadline). The
// read header timeout runs from the connection's start for the first
// request, from its first byte for the later ones; between requests
// only the idle timer and drains end the wait.
func (c *h1Conn) await(first bool) bool {
	var deadline time.Time
	if first && c.hdrTimeout > 0 {
		deadline = time.Now().Add(c.hdrTimeout)
		_ = c.conn.SetReadDeadline(deadline)
	}
	c.mu.Lock()
	if c.draining {
		c.mu.Unlock()
		return false
	}
	c.idle = true
	c.mu.Unlock()
	c.lr.n, c.lr.hit, c.lr.err = h1HeaderLimit, false, nil // the request's line and header from here
	c.skipCRLF()
	_, err := c.br.Peek(1)
	c.mu.Lock()
	c.idle = false
	c.mu.Unlock()
	if err != nil {
		return false
	}
	if !first && c.hdrTimeout > 0 {
		deadline = time.Now().Add(c.hdrTimeout)
	}
	_ = c.conn.SetReadDeadline(deadline) // also undoes a drain's, which came as the byte did
	return true
}

// skipCRLF drops the empty lines an old client sends after a POST body
// (RFC 9112 section 2.2, as net/http).
func (c *h1Conn) skipCRLF() {
	if !c.lastPut {
		return
	}
	peek, _ := c.br.Peek(4)
	n := 0
	for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
		n++
	}
	_, _ = c.br.Discard(n)
}

// drain makes the connection close at the next request boundary: at
// once when it waits for a request (a past read deadline ends the wait),
// else after the response in flight, which says Connection: close.
func (c *h1Conn) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	if c.idle {
		_ = c.conn.SetReadDeadline(aLongTimeAgo)
	}
}

func (c *h1Conn) closing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.draining
}

// serveRequest serves one request; false when the connection must close
// after it. The request's context is the connection's, which ends with
// it: no context of its own per request (net/http's server gives one,
// cancelled when the handler returns; nothing the bridge starts outlives
// its handler but the cache's fills, which detach with
// context.WithoutCancel), so that the upstream round trip's AfterFunc
// registers with a context whose children map and Done channel are made
// once per connection, not per request.
func (c *h1Conn) serveRequest(req *http.Request) bool {
	req.RemoteAddr, req.TLS = c.remote, c.tls
	req = req.WithContext(c.ctx)
	c.lastPut = req.Method == http.MethodPost || req.Method == http.MethodPut
	c.prepareBody(req)
	w := &c.w
	w.reset(c, req)
	if !c.checkExpect(req, w) {
		return c.endRequest(w)
	}
	if !c.handle(w, req) {
		c.abort(w)
		return false
	}
	w.finish()
	return c.endRequest(w)
}

// handle runs the handler, false when it panicked: the Bridge logs its
// own and passes on http.ErrAbortHandler; any other panic is logged here
// with its stack, once.
func (c *h1Conn) handle(w *h1Writer, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			if p != http.ErrAbortHandler {
				c.log.Error("panic serving an http request", "route", c.route, "client", c.remote,
					"method", bound(req.Method, MaxAuditField), "panic", p, "stack", string(debug.Stack()))
			}
		}
	}()
	c.handler.ServeHTTP(w, req)
	return true
}

// abort ends a response the handler gave up: what went out stays sent,
// nothing is added, the connection closes (the node sees a response cut
// short, or none).
func (c *h1Conn) abort(w *h1Writer) {
	if w.committed && w.bw != nil {
		_ = w.bw.Flush()
	}
	_ = c.conn.Close()
	c.endBody()
	c.releaseWriter()
}

// endRequest finishes a request's connection state after its response;
// false when the connection must close.
func (c *h1Conn) endRequest(w *h1Writer) bool {
	keep := !w.closeAfter && w.err == nil && !c.closing()
	if c.body != nil && !c.body.eof.Load() {
		keep = false
	}
	if !keep && c.body != nil {
		c.closeOut() // unblocks a read of the body still under way
	}
	c.endBody()
	c.releaseWriter()
	return keep
}

// closeOut closes the connection, first letting a node that is still
// sending see the answer: the close would otherwise reset it.
func (c *h1Conn) closeOut() {
	if c.linger {
		c.linger = false
		lingerClose(c.conn)
	}
	_ = c.conn.Close()
}

// writer is the connection's buffered writer, from the pool.
func (c *h1Conn) writer() *bufio.Writer {
	if c.bw == nil {
		c.bw = h1Writers.Get().(*bufio.Writer)
		c.bw.Reset(c.conn)
	}
	return c.bw
}

func (c *h1Conn) releaseWriter() {
	if c.bw != nil {
		c.bw.Reset(nil)
		h1Writers.Put(c.bw)
		c.bw, c.w.bw = nil, nil
	}
}
