package regcache

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// fillBufferSize is the size of a fill's read buffer.
const fillBufferSize = 256 << 10

// FetchFunc fetches a digest's content from upstream for Fill. ctx is the
// fill's own: it carries the values of the first caller's context but not
// its cancellation (the fill goes on for the others, and to store the
// content), and ends when the fill fails or the Cache closes; the body's
// reads must end with it (an http.Request built with it does).
// A non-nil error is returned, wrapped, to every caller of the fill.
type FetchFunc func(ctx context.Context) (Fetched, error)

// Fetched is an upstream's answer with the content.
type Fetched struct {
	// Body is the content; the cache closes it. Required.
	Body io.ReadCloser
	// Header is stored and returned with every Entry of the digest (pass
	// only what to replay, such as Content-Type and Docker-Content-Digest).
	Header http.Header
	// Size is the announced length (Content-Length); -1: not known. A
	// known size reserves the disk space before the first byte is served
	// (or, when it does not fit in MaxSize, none: see Fill) and must match
	// the body.
	Size int64
	// FromCache: the content comes from another cache (a shared tier),
	// not from upstream; its bytes are not counted as upstream bytes
	// (snigate_cache_upstream_bytes_total, Stats().UpstreamBytes).
	FromCache bool
}

// fill is one digest's transfer from upstream into a temporary file,
// which its readers read as it grows.
type fill struct {
	c     *Cache
	d     digest
	path  string   // the temporary file
	w     *os.File // the writer's handle
	ready chan struct{}
	once  sync.Once // closes ready

	// Set before ready is closed, read-only after.
	header    http.Header
	size      int64
	fromCache bool // the fetch read another cache: not upstream bytes

	// Guarded by Cache.mu.
	noStore   bool  // purged, or spilled: readers only
	reserved  int64 // counted in Cache.reserved
	spillSlot bool  // counted in Cache.spills

	mu      sync.Mutex
	written int64
	done    bool          // every byte written and verified
	err     error         // the fill failed
	wake    chan struct{} // closed and replaced on every change
	// spilled: the fill does not fit in MaxSize (spill.go). The file holds
	// the first diskLen bytes; win, the bytes [written-len(win), written),
	// kept for the readers, whose next offsets are in readers.
	spilled bool
	diskLen int64
	win     []byte
	readers map[*Entry]int64
	room    chan struct{} // a reader moved on or left (buffered 1)
}

// Fill returns digest's content: stored (as Get), or being filled (the
// caller joins the fill in flight), or else fetched now with fetch, one
// fetch per digest however many callers ask at once. It returns when the
// fetch has answered, with the Entry (Header and Size known) whose reads
// follow the bytes as they arrive and written to disk, or with the error:
//
//   - errors.Is(err, ErrBypass): the cache cannot help (unwritable
//     directory, full disk, the digest's fill in flight does not fit in
//     MaxSize...), serve the request from upstream;
//   - errors.Is(err, ErrFillFailed): the fetch failed (its own error is
//     wrapped too, for errors.As) or the fill broke before this caller
//     joined.
//
// The content is verified while filling and stored only when complete and
// verified; a fill that fails later fails every reader's next Read with an
// error matching ErrFillFailed (never io.EOF: a download that ends early
// never looks complete), and stores nothing. ctx bounds the caller's own
// waits and reads, not the fill. The caller closes the Entry.
//
// Fills in flight count against MaxSize with the stored content: a fill
// of known size reserves it (evicting least recently used content), one
// of unknown length reserves as it grows. A fill that does not fit (its
// size beside the other fills, or an unknown length growing past them)
// spills: it is not stored, writes nothing more to disk, and keeps its
// next bytes in memory for the readers it has (at most SpillWindow, so
// the upstream waits for the slowest of them, and drops one that holds
// the window full for FillIdleTimeout); a caller arriving joins it while
// the window still holds all it spilled, and gets ErrBypass once it
// dropped bytes.
func (c *Cache) Fill(ctx context.Context, dgst string, fetch FetchFunc) (*Entry, error) {
	d, err := parseDigest(dgst)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBypass, err)
	}
	for range lookupAttempts {
		if e, ok := c.Get(ctx, dgst); ok {
			return e, nil
		}
		e, again, err := c.joinOrStart(ctx, d, fetch)
		if err != nil {
			return nil, err
		}
		if !again {
			return e.awaitStart(ctx)
		}
	}
	return nil, fmt.Errorf("%w: %s is stored but cannot be read", ErrBypass, d)
}

// joinOrStart joins d's fill in flight or starts one; again means d is
// stored (Get it).
func (c *Cache) joinOrStart(ctx context.Context, d digest, fetch FetchFunc) (_ *Entry, again bool, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, false, fmt.Errorf("%w: %w", ErrBypass, ErrClosed)
	case c.unavailable != nil:
		return nil, false, c.unavailable
	case c.idx.get(d) != nil:
		return nil, true, nil
	}
	f := c.fills[d.hex]
	if f == nil || f.failed() { // a failed fill is on its way out: start anew
		var err error
		if f, err = c.startLocked(ctx, d, fetch); err != nil {
			return nil, false, err
		}
	}
	e, err := f.join(ctx)
	if err == nil && c.hooks.joined != nil {
		c.hooks.joined(d.String())
	}
	return e, false, err
}

// startLocked creates d's temporary file and starts its fill. Called with
// c.mu held: the fill cannot finish before the caller joined it.
func (c *Cache) startLocked(ctx context.Context, d digest, fetch FetchFunc) (*fill, error) {
	w, err := c.createTemp(d)
	if err != nil {
		return nil, c.fault("create a file in "+c.tmpDir(), err)
	}
	f := &fill{c: c, d: d, path: w.Name(), w: w, ready: make(chan struct{}),
		size: -1, wake: make(chan struct{}), readers: map[*Entry]int64{}, room: make(chan struct{}, 1)}
	c.fills[d.hex] = f
	fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(c.ctx, func() { cancel(ErrClosed) })
	c.wg.Go(func() {
		defer stop()
		defer cancel(nil)
		f.run(fctx, cancel, fetch)
	})
	return f, nil
}

// createTemp creates a fill's file in tmp/, recreating tmp/ if it went.
func (c *Cache) createTemp(d digest) (*os.File, error) {
	w, err := os.CreateTemp(c.tmpDir(), d.hex[:16]+"-*")
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(c.tmpDir(), 0o750); err == nil {
			w, err = os.CreateTemp(c.tmpDir(), d.hex[:16]+"-*")
		}
	}
	return w, err
}

// run is the fill's goroutine: fetch, copy, verify, then store or
// abandon.
func (f *fill) run(ctx context.Context, cancel context.CancelCauseFunc, fetch FetchFunc) {
	if err := f.transfer(ctx, cancel, fetch); err != nil {
		f.c.abandon(f, err)
		return
	}
	f.c.store(f) // verified: store it, then let the readers reach the end
}

// transfer fetches the content into the file and verifies it.
func (f *fill) transfer(ctx context.Context, cancel context.CancelCauseFunc, fetch FetchFunc) error {
	res, err := fetch(ctx)
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	if res.Body == nil {
		return errors.New("fetch: no body")
	}
	defer res.Body.Close()
	f.fromCache = res.FromCache
	if err := f.c.reserve(f, res.Size); err != nil {
		return err
	}
	f.announce(res.Header, res.Size)
	h, err := f.copyBody(ctx, cancel, res.Body)
	if err != nil {
		return err
	}
	return f.check(h)
}

// copyBody copies the body into the file, hashing it, and fails when no
// byte arrives for FillIdleTimeout.
func (f *fill) copyBody(ctx context.Context, cancel context.CancelCauseFunc, body io.Reader) (hash.Hash, error) {
	h := f.d.newHash()
	idle := f.c.cfg.FillIdleTimeout
	if idle > 0 {
		t := time.AfterFunc(idle, func() { cancel(fmt.Errorf("no byte from upstream for %s", idle)) })
		defer t.Stop()
		body = &idleReader{r: body, t: t, idle: idle}
	}
	buf := make([]byte, fillBufferSize)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if werr := f.write(ctx, h, buf[:n]); werr != nil {
				return nil, werr
			}
		}
		if err == io.EOF {
			return h, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
			}
			return nil, fmt.Errorf("read from upstream: %w", err)
		}
	}
}

// write appends p to the file, or to the window of a fill that does not
// fit in MaxSize, and to the hash, and wakes the readers.
func (f *fill) write(ctx context.Context, h hash.Hash, p []byte) error {
	if !f.fromCache {
		f.c.counts.upstreamBytes.Add(int64(len(p)))
		addCounter(f.c.m.upstreamBytes, float64(len(p)))
	}
	h.Write(p)
	if f.c.roomFor(f, int64(len(p))) {
		if _, err := f.w.Write(p); err != nil {
			return f.c.fault("write "+f.path, err)
		}
		f.mu.Lock()
		f.written += int64(len(p))
		f.wakeLocked()
		f.mu.Unlock()
	} else if err := f.keep(ctx, p); err != nil {
		return err
	}
	f.mu.Lock()
	over := f.size >= 0 && f.written > f.size
	f.mu.Unlock()
	if over {
		return fmt.Errorf("%w: the upstream sent more than the %d bytes it announced", ErrDigestMismatch, f.size)
	}
	return nil
}

// check verifies the length and the digest of what was written.
func (f *fill) check(h hash.Hash) error {
	f.mu.Lock()
	n := f.written
	f.mu.Unlock()
	if f.size >= 0 && n != f.size {
		return fmt.Errorf("%w: the upstream sent %d bytes, it announced %d", ErrDigestMismatch, n, f.size)
	}
	if sum := h.Sum(nil); !f.d.matches(sum) {
		return fmt.Errorf("%w: the %d bytes from upstream hash to %s:%x", ErrDigestMismatch, n, f.d.algo, sum)
	}
	return nil
}

// idleReader runs its timer while a read waits for the upstream: the
// time the fill spends writing, or waiting for its readers (spill.go),
// is not the upstream's.
type idleReader struct {
	r    io.Reader
	t    *time.Timer
	idle time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.t.Reset(r.idle)
	n, err := r.r.Read(p)
	r.t.Stop()
	return n, err
}
