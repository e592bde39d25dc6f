package regcache

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// MaxTags is the most tags a Cache remembers (RememberTag); beyond it the
// tag confirmed longest ago is forgotten, so the file stays small
// (about 200 bytes a tag) whatever the nodes ask for.
const MaxTags = 10000

// TagSaveInterval is how stale the tags file may be for a tag whose
// digest has not changed: such a confirmation is written at most this
// often, so a restart may forget up to this much of a tag's freshness.
// A confirmation that changes a tag's digest (or adds a tag) is written
// at once, but at most every TagSaveMinInterval (the next confirmation,
// or Close, writes what waited), so that nodes pulling many tags do not
// rewrite the file for each.
const (
	TagSaveInterval    = time.Minute
	TagSaveMinInterval = time.Second
)

// tagsName is the file of the remembered tags in the cache's directory.
const tagsName = "tags.json"

// Tag is a tag's last answer from the registry.
type Tag struct {
	Repository string    `json:"repository"`
	Tag        string    `json:"tag"`
	Digest     string    `json:"digest"`
	Confirmed  time.Time `json:"confirmed"` // when the registry last answered it
}

// tags is a Cache's remembered tags, written to <dir>/tags.json
// (atomically: a temporary file renamed over it).
type tags struct {
	mu    sync.Mutex
	m     map[tagKey]Tag
	saved time.Time // when the file was last written
	dirty bool      // a digest changed since
}

type tagKey struct{ repo, tag string }

// RememberTag records that the registry answered repository:tag with
// digest at time at. It writes the tags file when the digest is new for
// the tag, or when the file is older than TagSaveInterval; an error is
// the file's (the tag is remembered in memory anyway).
func (c *Cache) RememberTag(repository, tag, dgst string, at time.Time) error {
	if _, err := parseDigest(dgst); err != nil {
		return fmt.Errorf("remember tag %s:%s: %w", repository, tag, err)
	}
	t := &c.tags
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[tagKey]Tag{}
	}
	k := tagKey{repository, tag}
	old, had := t.m[k]
	if had && old.Confirmed.After(at) {
		return nil
	}
	t.m[k] = Tag{Repository: repository, Tag: tag, Digest: dgst, Confirmed: at.UTC()}
	t.trimLocked()
	t.dirty = t.dirty || !had || old.Digest != dgst
	since := at.Sub(t.saved)
	if t.dirty && since >= TagSaveMinInterval || since >= TagSaveInterval {
		return c.saveTagsLocked(at)
	}
	return nil
}

// saveTags writes the tags file if a digest changed since it was last
// written (Close).
func (c *Cache) saveTags() error {
	c.tags.mu.Lock()
	defer c.tags.mu.Unlock()
	if !c.tags.dirty {
		return nil
	}
	return c.saveTagsLocked(time.Now())
}

// LookupTag returns what the registry last answered for repository:tag.
func (c *Cache) LookupTag(repository, tag string) (Tag, bool) {
	c.tags.mu.Lock()
	defer c.tags.mu.Unlock()
	t, ok := c.tags.m[tagKey{repository, tag}]
	return t, ok
}

// Tags returns every remembered tag, by repository and tag.
func (c *Cache) Tags() []Tag {
	c.tags.mu.Lock()
	out := make([]Tag, 0, len(c.tags.m))
	for _, t := range c.tags.m {
		out = append(out, t)
	}
	c.tags.mu.Unlock()
	slices.SortFunc(out, func(a, b Tag) int {
		return cmp.Or(cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Tag, b.Tag))
	})
	return out
}

// trimLocked forgets the tags confirmed longest ago beyond MaxTags.
func (t *tags) trimLocked() {
	for len(t.m) > MaxTags {
		var oldest tagKey
		var at time.Time
		first := true
		for k, v := range t.m {
			if first || v.Confirmed.Before(at) {
				oldest, at, first = k, v.Confirmed, false
			}
		}
		delete(t.m, oldest)
	}
}

// saveTagsLocked writes the tags file: a temporary file in tmp/ renamed
// over it. Called with tags.mu held.
func (c *Cache) saveTagsLocked(now time.Time) error {
	if c.lock == nil {
		return nil // the directory is not ours (unavailable, or waiting for its lock)
	}
	list := make([]Tag, 0, len(c.tags.m))
	for _, t := range c.tags.m {
		list = append(list, t)
	}
	data, err := json.Marshal(list)
	if err != nil {
		return fmt.Errorf("encode the tags: %w", err)
	}
	f, err := os.CreateTemp(c.tmpDir(), "tags-*.json")
	if err != nil {
		return c.fault("write the tags file", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(c.cfg.Dir, tagsName))
	}
	if err != nil {
		os.Remove(f.Name())
		return c.fault("write the tags file", err)
	}
	c.tags.saved, c.tags.dirty = now, false
	return nil
}

// loadTags reads the tags file at Open; a missing file is no tags, a
// corrupt one is logged and ignored (the next confirmation replaces it).
func (c *Cache) loadTags() {
	data, err := os.ReadFile(filepath.Join(c.cfg.Dir, tagsName))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var list []Tag
	if err == nil {
		err = json.Unmarshal(data, &list)
	}
	if err != nil {
		c.log.Warn("ignoring the remembered tags: the file cannot be read", "route", c.cfg.Route,
			"file", filepath.Join(c.cfg.Dir, tagsName), "err", err)
		return
	}
	slices.SortFunc(list, func(a, b Tag) int { return b.Confirmed.Compare(a.Confirmed) })
	list = list[:min(len(list), MaxTags)]
	c.tags.mu.Lock()
	defer c.tags.mu.Unlock()
	if c.tags.m == nil {
		c.tags.m = make(map[tagKey]Tag, len(list))
	}
	for _, t := range list {
		k := tagKey{t.Repository, t.Tag}
		if cur, ok := c.tags.m[k]; ok && cur.Confirmed.After(t.Confirmed) {
			continue // confirmed while the directory was not ours yet
		}
		if _, err := parseDigest(t.Digest); err == nil && t.Repository != "" && t.Tag != "" {
			c.tags.m[k] = t
		}
	}
	c.tags.trimLocked()
}
