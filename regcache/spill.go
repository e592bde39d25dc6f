package regcache

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SpillWindow is the most bytes a fill that does not fit in MaxSize
// keeps in memory for its readers: past it, the fill reads no more from
// upstream until its slowest reader took the oldest bytes.
const SpillWindow = 4 * fillBufferSize

// MaxSpills is the most fills of known size that do not fit in MaxSize a
// Cache serves from memory at once (each holds up to SpillWindow and a
// read buffer: about 80 MiB in all); one more is not filled at all, and
// its callers get ErrBypass. A fill of unknown length spills once past
// MaxSize whatever the count: its readers are already being served.
const MaxSpills = 64

// errSpilled is the bypass a caller gets when the digest's fill in
// flight does not fit in MaxSize and has dropped bytes from its window:
// a new reader could not have them, so the caller serves it from
// upstream itself.
var errSpilled = fmt.Errorf("%w: the content's fill in flight does not fit in max_size", ErrBypass)

// reserve counts a fill of known size against MaxSize, with the other
// fills in flight, evicting stored content for it, and allocates its disk
// space (freeing stored content once if the disk is full). A fill that
// cannot fit even with nothing stored spills: its readers get the bytes
// from memory, nothing of it is written.
func (c *Cache) reserve(f *fill, size int64) error {
	if size < 0 {
		return nil // unknown: it reserves as it grows (roomFor)
	}
	c.mu.Lock()
	if size > c.maxSize-c.reserved {
		if c.spills >= MaxSpills {
			c.mu.Unlock()
			return fmt.Errorf("%w: %d bytes do not fit in max_size, and %d fills that do not fit are served already",
				ErrBypass, size, MaxSpills)
		}
		c.spillLocked(f, size)
		c.mu.Unlock()
		return nil
	}
	f.reserved = size
	c.reserved += size
	c.evictLocked()
	c.mu.Unlock()
	if size == 0 {
		return nil // fallocate refuses 0
	}
	err := allocate(f.w, size)
	if err != nil && faultReason(err) == reasonNoSpace {
		c.mu.Lock()
		freed := c.makeRoomLocked(size)
		c.mu.Unlock()
		if freed {
			err = allocate(f.w, size)
		}
	}
	if err != nil {
		return c.fault(fmt.Sprintf("allocate %d bytes for %s", size, f.d), err)
	}
	return nil
}

// roomFor reports whether n more bytes of f go to disk. A fill of known
// size reserved them; one of unknown length reserves them now, evicting
// stored content, while the fills in flight fit in MaxSize; past that it
// spills, and the bytes written so far stay for the readers behind.
func (c *Cache) roomFor(f *fill, n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case f.isSpilled():
		return false
	case f.size >= 0:
		return true
	case c.reserved+n > c.maxSize:
		c.spillLocked(f, -1)
		return false
	}
	f.reserved += n
	c.reserved += n
	c.evictLocked()
	return true
}

// spillLocked marks f as one that does not fit: not stored, its next
// bytes kept in memory, new readers joining only while none of them was
// dropped (joinableLocked). Called with c.mu held.
func (c *Cache) spillLocked(f *fill, size int64) {
	f.noStore, f.spillSlot = true, true
	c.spills++
	f.mu.Lock()
	f.spilled, f.diskLen = true, f.written
	f.mu.Unlock()
	c.log.Info("content does not fit in max_size: served to the readers of its fill, not stored",
		"route", c.cfg.Route, "digest", f.d.String(), "size", size, "written", f.diskLen,
		"max_size", c.maxSize, "reserved", c.reserved)
}

// joinableLocked reports whether a new reader can read f from its start:
// it has not spilled, or its window still holds every byte past the disk
// and it still has a reader (without one it is stopping, errNoReaders).
// Called with f.mu held.
func (f *fill) joinableLocked() bool {
	return !f.spilled || (f.written-int64(len(f.win)) == f.diskLen && len(f.readers) > 0)
}

func (f *fill) isSpilled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.spilled
}

// keep appends p, past the disk, to the window the readers read from,
// once the readers took enough of it to make room. A reader that holds
// the window full for FillIdleTimeout is dropped (its next read of the
// window fails), so one stalled node does not stall the others; a fill
// whose readers all went away stops.
func (f *fill) keep(ctx context.Context, p []byte) error {
	var t *time.Timer
	var timeout <-chan time.Time
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		f.mu.Lock()
		f.trimLocked()
		switch {
		case len(f.readers) == 0:
			f.mu.Unlock()
			return errNoReaders
		case len(f.win) == 0 || len(f.win)+len(p) <= SpillWindow:
			f.win = append(f.win, p...)
			f.written += int64(len(p))
			f.wakeLocked()
			f.mu.Unlock()
			return nil
		}
		f.mu.Unlock()
		if idle := f.c.cfg.FillIdleTimeout; t == nil && idle > 0 {
			t = time.NewTimer(idle)
			timeout = t.C
		}
		select {
		case <-f.room:
		case <-timeout:
			f.dropSlowest()
			t.Reset(f.c.cfg.FillIdleTimeout)
		case <-ctx.Done():
			return fmt.Errorf("wait for the readers: %w", context.Cause(ctx))
		}
	}
}

// errNoReaders ends a fill that spilled once no reader is left: no one
// else can join it, and it is not stored.
var errNoReaders = errors.New("every reader of a fill larger than max_size went away")

// dropSlowest drops the readers at the window's start: their next read of
// the window fails.
func (f *fill) dropSlowest() {
	f.mu.Lock()
	defer f.mu.Unlock()
	low := f.written
	for _, pos := range f.readers {
		low = min(low, pos)
	}
	for e, pos := range f.readers {
		if pos == low {
			delete(f.readers, e)
			e.behind = true
		}
	}
	f.wakeLocked()
}

// trimLocked drops the window's bytes that every reader has read.
// Called with f.mu held.
func (f *fill) trimLocked() {
	start := f.written - int64(len(f.win))
	low := f.written
	for _, pos := range f.readers {
		low = min(low, pos)
	}
	if low > start {
		n := copy(f.win, f.win[low-start:])
		f.win = f.win[:n]
	}
}

// readWindow copies the window's bytes at off into p for e: a fill that
// spilled, off past the disk. A reader behind the window (dropped, or
// reading before an offset it read from earlier) fails.
func (f *fill) readWindow(e *Entry, p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := f.written - int64(len(f.win))
	if e.behind || off < start {
		return 0, fmt.Errorf("%w: %s: offset %d is behind the bytes kept in memory (from %d) of a fill larger than max_size",
			ErrFillFailed, f.d, off, start)
	}
	return copy(p, f.win[off-start:]), nil
}

// moved records the offset a reader reads from, at the start of each of
// its reads, so the window keeps the bytes from there on.
func (f *fill) moved(e *Entry, off int64) {
	f.mu.Lock()
	if !e.behind {
		f.readers[e] = off
	}
	spilled := f.spilled
	f.mu.Unlock()
	if spilled {
		f.signalRoom()
	}
}

// leave forgets a closed reader.
func (f *fill) leave(e *Entry) {
	f.mu.Lock()
	delete(f.readers, e)
	f.mu.Unlock()
	f.signalRoom()
}

func (f *fill) signalRoom() {
	select {
	case f.room <- struct{}{}:
	default:
	}
}
