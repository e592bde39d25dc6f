package regcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
)

// Entry is one reader of a digest's content: stored (a hit) or being
// filled (its reads wait for the bytes as they arrive). It is an
// io.ReadSeeker for http.ServeContent and an io.ReaderAt for ranges.
// Read and Seek share one offset and are not for concurrent use; ReadAt
// is. Every reader has its own file handle: content removed (evicted,
// purged) while it reads stays readable to it. The caller closes it.
type Entry struct {
	c      *Cache
	d      digest
	rec    *record // stored content; nil for a fill
	fill   *fill   // content being filled; nil when stored
	f      *os.File
	header http.Header
	size   int64
	ctx    context.Context // bounds the waits for a fill's bytes
	off    int64           // Read and Seek's offset
	behind bool            // dropped by a fill that spilled; guarded by fill.mu

	closeOnce sync.Once
	closed    chan struct{}
}

func newStoredEntry(c *Cache, r *record, f *os.File, h http.Header, size int64, ctx context.Context) *Entry {
	return &Entry{c: c, d: r.d, rec: r, f: f, header: h, size: size, ctx: ctx, closed: make(chan struct{})}
}

// awaitStart waits for the fill's answer: the Entry with header and size,
// or the fill's failure.
func (e *Entry) awaitStart(ctx context.Context) (*Entry, error) {
	select {
	case <-e.fill.ready:
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	if err := e.fill.state().err; err != nil {
		e.Close()
		return nil, err
	}
	e.header, e.size = e.fill.header, e.fill.size
	return e, nil
}

// Digest is the content's digest, "sha256:<hex>".
func (e *Entry) Digest() string { return e.d.String() }

// Header is what was stored with the content (Fetched.Header); the
// caller must not modify it.
func (e *Entry) Header() http.Header { return e.header }

// Size is the content's length; -1 while a fill of unknown length is in
// flight.
func (e *Entry) Size() int64 {
	if e.size >= 0 || e.fill == nil {
		return e.size
	}
	if st := e.fill.state(); st.done {
		return st.written
	}
	return -1
}

// Stored reports whether the content came from the store (a hit) rather
// than from a fill in flight.
func (e *Entry) Stored() bool { return e.fill == nil }

// Verified waits for the end of the content's verification: nil once
// every byte is there and matched the digest (it is then stored), else
// the fill's error. A stored Entry is verified; so is one of unknown
// length, whose reader checks at io.EOF. http.ServeContent reads exactly
// the length, not to io.EOF, so a server of a fill in flight waits with
// this before its last bytes.
func (e *Entry) Verified() error {
	var b [1]byte
	n := e.Size()
	if n < 0 {
		return nil // streamed to io.EOF, which is the check
	}
	if _, err := e.ReadAt(b[:], n); err != io.EOF {
		return err
	}
	return nil
}

// Read reads from the offset. Reading a fill waits for its next bytes and
// ends with io.EOF only once every byte is there and verified; a failed
// fill returns an error matching ErrFillFailed.
func (e *Entry) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := e.readAt(p, e.off, false)
	e.off += int64(n)
	return n, err
}

// ReadAt reads len(p) bytes at off (waiting for a fill's bytes), or fewer
// with an error (io.EOF at the end). In a fill larger than MaxSize, whose
// bytes past the disk are kept in memory only until every reader read
// past them, a Read or ReadAt before the offset of the reader's previous
// read may fail.
func (e *Entry) ReadAt(p []byte, off int64) (int, error) {
	return e.readAt(p, off, true)
}

// Seek sets the offset. io.SeekEnd needs the size: an error while a fill
// of unknown length is in flight.
func (e *Entry) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = e.off + offset
	case io.SeekEnd:
		size := e.Size()
		if size < 0 {
			return 0, errors.New("regcache: seek from the end of content whose length is not known yet")
		}
		abs = size + offset
	default:
		return 0, errors.New("regcache: seek: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("regcache: seek to a negative offset")
	}
	e.off = abs
	return abs, nil
}

// Close releases the reader's file handle and wakes its waiting reads.
// It is safe to call more than once.
func (e *Entry) Close() error {
	err := ErrClosed
	e.closeOnce.Do(func() {
		close(e.closed)
		err = e.f.Close()
		if e.fill != nil {
			e.fill.leave(e)
		}
	})
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// readAt reads at off: stored content directly, a fill as its bytes
// arrive. full: wait for len(p) bytes (ReaderAt), else return what is there.
func (e *Entry) readAt(p []byte, off int64, full bool) (int, error) {
	if e.fill == nil {
		return e.readStored(p, off)
	}
	e.fill.moved(e, off)
	n := 0
	for n < len(p) {
		st := e.fill.state()
		if st.err != nil {
			return n, st.err
		}
		at := off + int64(n)
		if avail := st.written - at; avail > 0 {
			m, err := e.readFill(p[n:n+int(min(avail, int64(len(p)-n)))], at, st.fileEnd)
			n += m
			if err != nil {
				return n, err
			}
			if !full {
				return n, nil
			}
			continue
		}
		if st.done {
			return n, io.EOF
		}
		if err := e.await(st.wake); err != nil {
			return n, err
		}
	}
	return n, nil
}

// readFill reads written bytes of the fill at off: from the file below
// fileEnd, else from the window of a fill that spilled.
func (e *Entry) readFill(p []byte, off, fileEnd int64) (int, error) {
	if off >= fileEnd {
		return e.fill.readWindow(e, p, off)
	}
	m, err := e.f.ReadAt(p[:min(int64(len(p)), fileEnd-off)], off)
	if err != nil {
		return m, e.c.fault("read "+e.fill.path, fmt.Errorf("%w (a fill's written bytes)", err))
	}
	return m, nil
}

// await waits for the fill's next change, the Entry's Close or its
// context's end.
func (e *Entry) await(wake <-chan struct{}) error {
	if e.c.hooks.waits != nil {
		e.c.hooks.waits(e.d.String())
	}
	select {
	case <-wake:
		return nil
	case <-e.closed:
		return ErrClosed
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
}

// readStored reads stored content. A failed read (not the end) is a
// fault, and the file is dropped so that the next request fills it again.
func (e *Entry) readStored(p []byte, off int64) (int, error) {
	n, err := e.f.ReadAt(p, off)
	if err == nil || err == io.EOF {
		return n, err
	}
	select {
	case <-e.closed:
		return n, ErrClosed
	default:
	}
	e.c.mu.Lock()
	e.c.removeLocked(e.rec)
	e.c.mu.Unlock()
	return n, e.c.fault("read "+e.c.contentPath(e.d), err)
}
