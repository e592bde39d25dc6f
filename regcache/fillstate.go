package regcache

import (
	"context"
	"errors"
	"fmt"
	"github.com/snigate/snigate/internal/filewatch"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// announce publishes the header and size: the callers waiting in Fill
// return their Entries.
func (f *fill) announce(h http.Header, size int64) {
	f.header, f.size = h, max(size, -1)
	f.once.Do(func() { close(f.ready) })
}

// finish ends the fill: err nil means every byte is written and
// verified. It wakes every reader (and the callers still in Fill).
func (f *fill) finish(err error) {
	f.mu.Lock()
	f.done, f.err = err == nil, err
	f.wakeLocked()
	f.mu.Unlock()
	f.once.Do(func() { close(f.ready) })
}

// wakeLocked wakes the readers waiting for a change. Called with f.mu held.
func (f *fill) wakeLocked() {
	close(f.wake)
	f.wake = make(chan struct{})
}

// fillState is what a reader needs: the bytes written (those below
// fileEnd are in the file), whether they are all there and verified, the
// failure, and a channel closed on the next change.
type fillState struct {
	written, fileEnd int64
	done             bool
	err              error
	wake             <-chan struct{}
}

func (f *fill) state() fillState {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := fillState{written: f.written, fileEnd: f.written, done: f.done, err: f.err, wake: f.wake}
	if f.spilled {
		st.fileEnd = f.diskLen
	}
	return st
}

// failed reports whether the fill has failed.
func (f *fill) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err != nil
}

// forgetLocked takes the fill out of Cache.fills (unless a new fill of the
// digest took its place) and releases its reservation. Called with
// Cache.mu held.
func (c *Cache) forgetLocked(f *fill) {
	if c.fills[f.d.hex] == f {
		delete(c.fills, f.d.hex)
	}
	c.reserved -= f.reserved
	f.reserved = 0
	if f.spillSlot {
		c.spills--
		f.spillSlot = false
	}
}

// abandon ends a failed fill: every reader fails, nothing is stored.
// The temporary file is gone before any reader learns of the failure.
func (c *Cache) abandon(f *fill, err error) {
	c.mu.Lock()
	c.forgetLocked(f)
	c.mu.Unlock()
	f.w.Close()
	os.Remove(f.path) // readers keep their open handles; their reads fail on f.err
	f.finish(fmt.Errorf("%w: %s: %w", ErrFillFailed, f.d, err))
	addCounter(c.m.fillsFailed, 1)
	if c.hooks.stored != nil {
		c.hooks.stored(f.d.String())
	}
	if errors.Is(err, ErrDigestMismatch) {
		c.log.Warn("upstream content does not match its digest: served to nobody, not stored",
			"route", c.cfg.Route, "digest", f.d.String(), "err", err)
	}
}

// store renames a verified fill into place and indexes it, unless it was
// purged or is larger than MaxSize; then it is just removed. Then the
// readers may reach the end: the bytes are verified, and a reader that saw
// the end finds the content stored. A failure to store is a fault; the
// readers still get their bytes.
func (c *Cache) store(f *fill) {
	metaTmp, err := c.keep(f)
	f.finish(nil)
	f.w.Close()
	if err != nil {
		os.Remove(f.path)
		if metaTmp != "" {
			os.Remove(metaTmp)
		}
		if !errors.Is(err, errNotStored) {
			c.fault("store "+f.d.String(), err)
		}
	}
	addCounter(c.m.fillsOK, 1)
	if c.hooks.stored != nil {
		c.hooks.stored(f.d.String())
	}
}

// keep writes the fill's metadata and installs both; it returns the
// metadata's temporary name (to remove on failure) and errNotStored for
// a fill not to be kept.
func (c *Cache) keep(f *fill) (string, error) {
	fi, err := f.w.Stat()
	metaTmp := ""
	if err == nil {
		metaTmp, err = c.writeMeta(f.d, fi.Size(), f.header)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(f)
	switch {
	case err != nil:
		return metaTmp, err
	case f.noStore:
		return metaTmp, errNotStored
	}
	return metaTmp, c.installLocked(f, metaTmp)
}

// errNotStored is store's note that a fill was not to be kept.
var errNotStored = errors.New("not to be stored")

// installLocked renames the content, then its metadata, into place and
// indexes them, with the file's stat after the rename (which moves its
// ctime). Called with c.mu held.
func (c *Cache) installLocked(f *fill, metaTmp string) error {
	dst := c.contentPath(f.d)
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	if err := os.Rename(f.path, dst); err != nil {
		return err
	}
	if err := os.Rename(metaTmp, c.metaPath(f.d)); err != nil {
		os.Remove(dst)
		return err
	}
	fi, err := f.w.Stat()
	if err != nil {
		os.Remove(dst)
		os.Remove(c.metaPath(f.d))
		return err
	}
	st := filewatch.IDOf(fi)
	c.idx.add(&record{d: f.d, size: st.Size(), stat: st, verified: true, header: f.header,
		lastUse: time.Now().UnixNano()})
	c.evictLocked()
	c.publishSize()
	return nil
}

// join opens a reader of the fill, or returns errSpilled when the fill
// spilled and a new reader could not read it from its start (joinable).
// Called with Cache.mu held, while the fill is in Cache.fills, so its
// file is still there.
func (f *fill) join(ctx context.Context) (*Entry, error) {
	r, err := os.Open(f.path)
	if err != nil {
		return nil, f.c.fault("open "+f.path, err)
	}
	e := &Entry{c: f.c, d: f.d, f: r, fill: f, ctx: ctx, size: -1, closed: make(chan struct{})}
	f.mu.Lock()
	ok := f.joinableLocked()
	if ok {
		f.readers[e] = 0
	}
	f.mu.Unlock()
	if !ok {
		r.Close()
		return nil, errSpilled
	}
	return e, nil
}

// Filling reports whether digest's fill is in flight (started, not
// failed, not yet stored).
func (c *Cache) Filling(dgst string) bool {
	d, err := parseDigest(dgst)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.fills[d.hex]
	return f != nil && !f.failed()
}
