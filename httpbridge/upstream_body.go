package httpbridge

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// upBody is the body of an answer read from a pooled HTTP/1.1
// connection, which it owns until the request ends: read to its end,
// the connection goes back to the pool unless the answer or the request
// said Connection: close or the answer was close-delimited (keep false),
// or the request's context was cancelled; closed before its end, or
// failing, the connection is closed, as net/http's Transport does (no
// drain: a node that leaves early is usually gone, and what is left of a
// blob is megabytes).
type upBody struct {
	pc   *upConn
	body io.ReadCloser // ReadResponse's, framing the body
	stop func() bool   // stops the context's AfterFunc
	ctx  context.Context
	keep bool

	mu      sync.Mutex // Close may come from another goroutine than Read
	reading bool       // a Read is in body.Read, without mu
	done    bool       // finished, or closed during a Read
	err     error      // after done: what Read returns
}

func (b *upBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return 0, b.err
	}
	b.reading = true
	b.mu.Unlock()
	n, err := b.body.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reading = false
	switch {
	case b.done: // closed meanwhile, which closed the connection
		b.finish(false)
		return n, b.err
	case err == io.EOF:
		b.finish(true)
	case err != nil:
		if b.ctx.Err() != nil {
			err = fmt.Errorf("read upstream body: %w", context.Cause(b.ctx))
		}
		b.err = err
		b.finish(false)
	}
	return n, err
}

// Close ends the request: before the end of the body, the connection
// closes; during a Read, the connection is closed at once so that the
// Read returns, and the Read finishes the rest.
func (b *upBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil
	}
	if b.reading {
		b.done, b.err = true, http.ErrBodyReadAfterClose
		_ = b.pc.conn.Close()
		return nil
	}
	b.finish(false)
	return nil
}

// finish ends the request's use of the connection: back to the pool when
// it is reusable (read to its end, keep, the context's AfterFunc did not
// run, nothing unasked for after it), else closed. b.mu is held, or b is
// not shared yet.
func (b *upBody) finish(eof bool) {
	pc := b.pc
	if pc == nil {
		return
	}
	b.pc, b.done = nil, true
	if b.err == nil {
		b.err = http.ErrBodyReadAfterClose
		if eof {
			b.err = io.EOF
		}
	}
	if b.stop() && eof && b.keep && pc.drained() {
		pc.pool.put(pc)
		return
	}
	pc.close()
}
