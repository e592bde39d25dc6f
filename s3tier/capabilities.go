package s3tier

import (
	"time"

	"github.com/snigate/snigate/httpcache"
)

// The local store's optional capabilities pass through a Tiered store:
// remembered tags (cache.tags) and fills in flight (ranges of cold
// digests) are the local tier's. A Local without one behaves as a store
// without it: nothing remembered, no fill in flight.
var (
	_ httpcache.TagStore    = (*Tiered)(nil)
	_ httpcache.FillWatcher = (*Tiered)(nil)
)

// RememberTag records the registry's answer for repository:tag in Local.
func (t *Tiered) RememberTag(repository, tag, digest string, at time.Time) error {
	if ts, ok := t.Local.(httpcache.TagStore); ok {
		return ts.RememberTag(repository, tag, digest, at)
	}
	return nil
}

// LookupTag returns what Local remembers of repository:tag.
func (t *Tiered) LookupTag(repository, tag string) (string, time.Time, bool) {
	if ts, ok := t.Local.(httpcache.TagStore); ok {
		return ts.LookupTag(repository, tag)
	}
	return "", time.Time{}, false
}

// Filling reports whether Local fills digest now.
func (t *Tiered) Filling(digest string) bool {
	fw, ok := t.Local.(httpcache.FillWatcher)
	return ok && fw.Filling(digest)
}
