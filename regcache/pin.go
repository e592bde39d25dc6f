package regcache

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// SetPinned replaces the digests that are never evicted (the route's
// cache.pin images: their manifests, configs and layers). Pinned content
// counts in MaxSize like any other; when it alone exceeds MaxSize,
// nothing else is kept. Purge still removes it.
func (c *Cache) SetPinned(digests []string) {
	m := make(map[string]bool, len(digests))
	for _, s := range digests {
		if d, err := parseDigest(s); err == nil {
			m[d.hex] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pinned = m
	c.evictLocked() // what is no longer pinned may go now
}

// AddPinned adds digests to those never evicted.
func (c *Cache) AddPinned(digests []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pinned == nil {
		c.pinned = map[string]bool{}
	}
	for _, s := range digests {
		if d, err := parseDigest(s); err == nil {
			c.pinned[d.hex] = true
		}
	}
}

// Pinned reports whether digest is pinned.
func (c *Cache) Pinned(digest string) bool {
	d, err := parseDigest(digest)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pinned[d.hex]
}

// oldestUnpinnedLocked is the least recently used record that is not
// pinned; nil when there is none. Called with c.mu held.
func (c *Cache) oldestUnpinnedLocked() *record {
	for e := c.idx.lru.Back(); e != nil; e = e.Prev() {
		if r := e.Value.(*record); !c.pinned[r.d.hex] {
			return r
		}
	}
	return nil
}

// Holds reports whether digest is stored (its file is verified before
// it is served, not here).
func (c *Cache) Holds(digest string) bool {
	d, err := parseDigest(digest)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idx.get(d) != nil
}

// Put stores body as digest's content with header beside it, verified
// against the digest (size -1: unknown), as a Fill whose fetch is body:
// it returns once the content is stored, or with the fill's error (the
// bytes do not match among them). Content already stored is kept.
func (c *Cache) Put(ctx context.Context, digest string, header http.Header, size int64, body io.Reader) error {
	e, err := c.Fill(ctx, digest, func(context.Context) (Fetched, error) {
		return Fetched{Body: io.NopCloser(body), Header: header, Size: size}, nil
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", digest, err)
	}
	defer e.Close()
	if err := e.Verified(); err != nil {
		return fmt.Errorf("store %s: %w", digest, err)
	}
	if !c.Holds(digest) {
		return fmt.Errorf("store %s: %w: not kept (larger than max_size beside the fills in flight?)", digest, ErrBypass)
	}
	return nil
}
