package regcache

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/snigate/snigate/internal/filewatch"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// errLocked is the error of Open on a directory another Cache holds.
var errLocked = errors.New("regcache: cache directory in use")

// prepare creates the directory and its tmp/, takes the lock and removes
// the leftovers of fills a crash interrupted.
func (c *Cache) prepare() error {
	if err := os.MkdirAll(c.cfg.Dir, 0o750); err != nil {
		return err
	}
	lock, err := lockDir(filepath.Join(c.cfg.Dir, lockName))
	if err != nil {
		if errors.Is(err, errLocked) {
			return fmt.Errorf("%w: %s is open in another Cache (a second snigate, another route with the same cache.dir, or a reload that opened it again instead of keeping it): %w",
				errLocked, c.cfg.Dir, err)
		}
		return err
	}
	c.lock = lock
	if err := os.RemoveAll(c.tmpDir()); err != nil {
		return err
	}
	return os.Mkdir(c.tmpDir(), 0o750)
}

// rebuild indexes the stored content from the directory: names and
// file metadata only, so that a large cache is usable within seconds.
// Content files without metadata (a crash between the two renames) and
// metadata without content are removed; names the cache would not write
// are left alone.
func (c *Cache) rebuild() {
	c.loadTags()
	var found []*record
	var stray int
	for algo := range hexLen {
		recs, n := c.scanAlgo(algo)
		found, stray = append(found, recs...), stray+n
	}
	slices.SortFunc(found, func(a, b *record) int { return cmp.Compare(a.lastUse, b.lastUse) })
	c.mu.Lock()
	for _, r := range found {
		c.idx.add(r) // oldest first: the last added is the most recently used
	}
	c.evictLocked()
	entries, bytes := c.idx.len(), c.idx.bytes
	c.mu.Unlock()
	c.log.Info("cache opened", "route", c.cfg.Route, "dir", c.cfg.Dir, "entries", entries,
		"bytes", bytes, "max_size", FormatSize(c.maxSize), "unknown_files", stray)
}

// scanAlgo indexes <dir>/<algo>/??/: the records found, and the number of
// names it did not recognise.
func (c *Cache) scanAlgo(algo string) ([]*record, int) {
	top := filepath.Join(c.cfg.Dir, algo)
	subs, err := os.ReadDir(top)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.fault("read cache directory", err)
		}
		return nil, 0
	}
	var recs []*record
	stray := 0
	for _, sub := range subs {
		if !sub.IsDir() || len(sub.Name()) != 2 {
			stray++
			continue
		}
		r, n := c.scanPrefix(algo, filepath.Join(top, sub.Name()), sub.Name())
		recs, stray = append(recs, r...), stray+n
	}
	return recs, stray
}

// scanPrefix indexes one <dir>/<algo>/<prefix>/ directory.
func (c *Cache) scanPrefix(algo, dir, prefix string) ([]*record, int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		c.fault("read cache directory", err)
		return nil, 0
	}
	metas := map[string]bool{}
	for _, e := range ents {
		if hx, ok := strings.CutSuffix(e.Name(), metaExt); ok {
			metas[hx] = true
		}
	}
	var recs []*record
	stray := 0
	for _, e := range ents {
		name := e.Name()
		if hx, ok := strings.CutSuffix(name, metaExt); ok {
			if _, err := parseDigest(algo + ":" + hx); err == nil && !hasEntry(ents, hx) {
				os.Remove(filepath.Join(dir, name)) // metadata of nothing
			}
			continue
		}
		d, err := parseDigest(algo + ":" + name)
		if err != nil || !strings.HasPrefix(name, prefix) || !e.Type().IsRegular() {
			stray++
			continue
		}
		if r := c.scanContent(d, e, metas[name]); r != nil {
			recs = append(recs, r)
		}
	}
	return recs, stray
}

// scanContent is the record of one content file, or nil when it is not
// to be kept (no metadata: removed).
func (c *Cache) scanContent(d digest, e os.DirEntry, hasMeta bool) *record {
	if !hasMeta {
		os.Remove(c.contentPath(d))
		return nil
	}
	fi, err := e.Info()
	if err != nil {
		return nil // removed meanwhile
	}
	st := filewatch.IDOf(fi)
	return &record{d: d, size: st.Size(), stat: st, lastUse: lastUse(fi)}
}

// hasEntry reports whether ents has a file named name.
func hasEntry(ents []os.DirEntry, name string) bool {
	_, found := slices.BinarySearchFunc(ents, name, func(e os.DirEntry, n string) int {
		return strings.Compare(e.Name(), n)
	})
	return found
}
