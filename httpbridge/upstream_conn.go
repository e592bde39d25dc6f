package httpbridge

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"sync"
	"time"
)

// MaxUpstreamHeaderBytes bounds what an HTTP/1.1 upstream may send as the
// status lines and headers of one answer (its 1xx answers included)
// before the gateway gives up on it: the memory a hostile or broken
// registry can make one request hold before a byte of body. net/http's
// Transport allows 10 MiB; registries send a few KiB.
const MaxUpstreamHeaderBytes = 1 << 20

// max1xxAnswers bounds the informational answers (100, 103) skipped
// before the final one, as net/http's Transport does.
const max1xxAnswers = 5

// upBufferSize is the size of the write buffer a request is written
// through; a connection's read buffer is h1ReaderSize. Both are
// net/http's Transport's default, 4 KiB.
const upBufferSize = 4 << 10

// upWriters are the write buffers of the requests being written: a
// connection holds one only while it writes a request (then the answer
// takes minutes, for a blob), its reader for its life (it goes back to
// h1Readers, the node leg's, of the same size).
var upWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, upBufferSize) }}

// upConn is one pooled HTTP/1.1 connection to an upstream. It is used
// by one request at a time, in that request's goroutine: no goroutine
// of its own. It is the reader under br, counting and bounding what the
// upstream sends.
type upConn struct {
	conn  net.Conn // the *tls.Conn of dialTLS
	tls   *tls.ConnectionState
	addr  string // h.Addr(), the pool's key
	br    *bufio.Reader
	pool  *upPool
	probe *upProbe // nil: the connection cannot be looked into
	reads int64    // bytes read from conn since the request began
	limit int64    // bytes conn may still give: MaxUpstreamHeaderBytes while headers are read
	// reused: a request was answered on it before; a failure of the
	// next one before any byte of its answer may be the registry having
	// closed it while idle.
	reused bool
	abort  func() // closes conn, from any goroutine (a cancelled request); made once
	// idle-state fields, guarded by pool.mu.
	idleSince time.Time
	idleTimer *time.Timer
}

func newUpConn(p *upPool, addr string, c net.Conn) *upConn {
	pc := &upConn{conn: c, addr: addr, pool: p, limit: math.MaxInt64, probe: newUpProbe(c)}
	pc.abort = func() { _ = c.Close() }
	if tc, ok := c.(*tls.Conn); ok {
		st := tc.ConnectionState()
		pc.tls = &st
	}
	pc.br = h1Readers.Get().(*bufio.Reader)
	pc.br.Reset(pc)
	return pc
}

// Read is br's source: it counts the bytes of the answer and refuses
// more than limit.
func (pc *upConn) Read(b []byte) (int, error) {
	if pc.limit <= 0 {
		return 0, fmt.Errorf("read upstream answer: headers exceed %d bytes", MaxUpstreamHeaderBytes)
	}
	if int64(len(b)) > pc.limit {
		b = b[:pc.limit]
	}
	n, err := pc.conn.Read(b)
	pc.reads += int64(n)
	pc.limit -= int64(n)
	return n, err
}

// begin readies pc for a request: nothing read yet, headers bounded.
func (pc *upConn) begin() {
	pc.reads = 0
	pc.limit = MaxUpstreamHeaderBytes
}

// headersDone lifts the header bound for the body.
func (pc *upConn) headersDone() { pc.limit = math.MaxInt64 }

// drained: nothing came after the answer that pc was read for, neither
// in br nor decrypted or waiting to be in the TLS connection's own
// buffer (a read with a deadline passed gets those without touching the
// socket). A registry that wrote a second answer nobody asked for,
// before or with the end of the first, leaves it there; the socket
// itself is looked into when the connection is taken again (upProbe).
func (pc *upConn) drained() bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	_ = pc.conn.SetReadDeadline(aLongTimeAgo) // a read returns at once with what is buffered, or a timeout
	_, err := pc.br.Peek(1)
	_ = pc.conn.SetReadDeadline(time.Time{})
	return isTimeout(err)
}

// close closes the connection and gives its buffers back. It is called
// once, by the request using it or by the pool for an idle one.
func (pc *upConn) close() {
	_ = pc.conn.Close()
	pc.br.Reset(nil)
	h1Readers.Put(pc.br)
	pc.br = nil
}
