package regcache

import (
	"context"
	"errors"
	"fmt"
	"github.com/snigate/snigate/internal/filewatch"
	"io"
	"net/http"
	"os"
)

// errCorrupt marks a stored file that failed verification.
var errCorrupt = errors.New("stored file does not match its digest")

// lookupAttempts bounds the retries of Get and Fill when the index
// changes under them (a fill stored, a file removed).
const lookupAttempts = 3

// Get returns digest's stored content, or false: not stored (or not a
// digest the cache addresses), or stored but corrupt (then removed, so
// that Fill fetches it again), or unreadable (counted as an error; Fill
// then returns ErrBypass). A file is verified (hashed, while concurrent
// Gets of it wait) before it is first served after Open, and again
// whenever its size, mtime or inode changed since. Content being filled
// is not returned: Fill joins it. After Close every Get misses. The
// caller closes the Entry.
func (c *Cache) Get(ctx context.Context, dgst string) (*Entry, bool) {
	d, err := parseDigest(dgst)
	if err != nil {
		return nil, false
	}
	for range lookupAttempts {
		e, again := c.get(ctx, d)
		if !again {
			return e, e != nil
		}
	}
	return nil, false
}

// get is one attempt of Get; again means the index changed meanwhile.
func (c *Cache) get(ctx context.Context, d digest) (_ *Entry, again bool) {
	r := c.lookup(d)
	if r == nil {
		return nil, false
	}
	f, st, err := openStat(c.contentPath(d))
	if err != nil {
		c.openFailed(r, err)
		return nil, false
	}
	c.mu.Lock()
	if c.idx.get(d) != r {
		c.mu.Unlock()
		f.Close()
		return nil, true
	}
	if r.verified && r.stat == st {
		h := r.header
		c.mu.Unlock()
		return newStoredEntry(c, r, f, h, st.Size(), ctx), false
	}
	if wait := r.verify; wait != nil {
		c.mu.Unlock()
		f.Close()
		return nil, awaitClosed(ctx, wait)
	}
	r.verify = make(chan struct{})
	c.mu.Unlock()
	return c.verifyAndServe(ctx, r, f, st), false
}

// lookup finds d's record and marks it used; nil after Close.
func (c *Cache) lookup(d digest) *record {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	r := c.idx.get(d)
	if r != nil {
		c.idx.touch(r)
	}
	return r
}

// openFailed handles a stored file that would not open: gone (removed
// behind our back) drops the record; anything else is a fault, and the
// record stays for the next try.
func (c *Cache) openFailed(r *record, err error) {
	if errors.Is(err, os.ErrNotExist) {
		c.mu.Lock()
		c.removeLocked(r)
		c.mu.Unlock()
		return
	}
	c.fault("open "+c.contentPath(r.d), err)
}

// verifyAndServe verifies f (r's file, as stat st) and returns its Entry,
// or nil after removing a corrupt file or counting a fault. It ends r's
// verification, waking the Gets that waited for it.
func (c *Cache) verifyAndServe(ctx context.Context, r *record, f *os.File, st filewatch.ID) *Entry {
	h, err := c.verifyContent(f, r.d, st)
	c.mu.Lock()
	close(r.verify)
	r.verify = nil
	switch {
	case err == nil:
		r.verified, r.stat, r.header = true, st, h
	case errors.Is(err, errCorrupt):
		c.removeLocked(r)
	}
	c.mu.Unlock()
	if err != nil {
		f.Close()
		c.verifyFailed(r.d, err)
		return nil
	}
	return newStoredEntry(c, r, f, h, st.Size(), ctx)
}

// verifyContent hashes the file and reads its metadata.
func (c *Cache) verifyContent(f *os.File, d digest, st filewatch.ID) (http.Header, error) {
	h := d.newHash()
	n, err := io.Copy(h, io.NewSectionReader(f, 0, st.Size()))
	if err != nil {
		return nil, c.fault("verify "+c.contentPath(d), err)
	}
	if n != st.Size() || !d.matches(h.Sum(nil)) {
		return nil, fmt.Errorf("%w: %s", errCorrupt, c.contentPath(d))
	}
	header, err := c.readMeta(d, st.Size())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s has no metadata", errCorrupt, c.contentPath(d))
	case err != nil && !errors.Is(err, errCorrupt):
		return nil, c.fault("read "+c.metaPath(d), err)
	}
	return header, err
}

// verifyFailed counts and logs a corrupt file (faults are counted where
// they happen).
func (c *Cache) verifyFailed(d digest, err error) {
	if !errors.Is(err, errCorrupt) {
		return
	}
	c.counts.corrupt.Add(1)
	addCounter(c.m.corrupt, 1)
	c.log.Warn("cache file failed verification: removed, it will be fetched again",
		"route", c.cfg.Route, "digest", d.String(), "err", err)
}

// openStat opens path and stats the open file.
func openStat(path string) (*os.File, filewatch.ID, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, filewatch.ID{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, filewatch.ID{}, err
	}
	return f, filewatch.IDOf(fi), nil
}

// awaitClosed waits for ch to close; false if ctx ended first.
func awaitClosed(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}
