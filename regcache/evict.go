package regcache

import (
	"errors"
	"os"
)

// evictLocked removes least recently used content that is not pinned
// until the stored bytes plus the announced sizes of fills in flight fit
// in maxSize. A reader
// that has a removed file open goes on reading it: the name goes, the
// inode stays until its last close. Called with c.mu held.
func (c *Cache) evictLocked() {
	for c.idx.bytes+c.reserved > c.maxSize {
		r := c.oldestUnpinnedLocked()
		if r == nil {
			return
		}
		c.removeLocked(r)
		c.counts.evictedBytes.Add(r.size)
		addCounter(c.m.evictedBytes, float64(r.size))
	}
}

// makeRoomLocked removes least recently used content that is not pinned
// until at least n bytes are freed or nothing is left, whatever maxSize
// says: the disk is full. It reports whether it removed anything. Called with c.mu held.
func (c *Cache) makeRoomLocked(n int64) bool {
	var freed int64
	for freed < n {
		r := c.oldestUnpinnedLocked()
		if r == nil {
			break
		}
		c.removeLocked(r)
		freed += r.size
		c.counts.evictedBytes.Add(r.size)
		addCounter(c.m.evictedBytes, float64(r.size))
	}
	return freed > 0
}

// removeLocked deletes r from the index and, if it was still there, its
// files. The error (a file that would not go) matches ErrBypass. Called
// with c.mu held, so that no fill renames a new file of the same digest
// into place between the two.
func (c *Cache) removeLocked(r *record) error {
	if !c.idx.remove(r) {
		return nil
	}
	defer c.publishSize()
	var errs []error
	for _, p := range []string{c.contentPath(r.d), c.metaPath(r.d)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, c.fault("remove "+p, err))
		}
	}
	return errors.Join(errs...)
}

// Purge removes digest's stored content, and keeps a fill of it in
// flight from being stored (its readers still get their bytes). It
// reports whether there was anything to remove. Readers of the removed
// file finish their download.
func (c *Cache) Purge(dgst string) (bool, error) {
	d, err := parseDigest(dgst)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	found := false
	if f := c.fills[d.hex]; f != nil {
		f.noStore, found = true, true
	}
	if r := c.idx.get(d); r != nil {
		return true, c.removeLocked(r)
	}
	return found, nil
}

// PurgeAll removes all stored content and keeps every fill in flight from
// being stored. It returns the number of digests and bytes removed.
func (c *Cache) PurgeAll() (int, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.fills {
		f.noStore = true
	}
	var errs []error
	var bytes int64
	all := c.idx.all()
	for _, r := range all {
		bytes += r.size
		errs = append(errs, c.removeLocked(r))
	}
	return len(all), bytes, errors.Join(errs...)
}
