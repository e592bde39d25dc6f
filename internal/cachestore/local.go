// Package cachestore adapts the local cache store (regcache) to the cache
// link's Store interface (httpcache) and its optional capabilities: the
// one adapter the gateway, the shared tier's tests and the images' tests
// use. (httpcache's own tests keep a copy: they cannot import a package
// that imports httpcache.)
package cachestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/regcache"
)

// Local is a route's regcache.Cache as the httpcache.Store of its cache
// link: the same content, in httpcache's terms. C must not be nil.
type Local struct{ C *regcache.Cache }

var _ httpcache.Store = Local{}

// Get returns the stored, verified content of digest.
func (s Local) Get(ctx context.Context, digest string) (httpcache.Entry, bool) {
	e, ok := s.C.Get(ctx, digest)
	if !ok {
		return nil, false
	}
	return e, true
}

// Fill returns digest's content, fetched with fetch unless it is stored
// or filling; regcache's bypass is httpcache's.
func (s Local) Fill(ctx context.Context, digest string, fetch httpcache.FetchFunc) (httpcache.Entry, error) {
	e, err := s.C.Fill(ctx, digest, func(ctx context.Context) (regcache.Fetched, error) {
		f, err := fetch(ctx)
		return regcache.Fetched{Body: f.Body, Header: f.Header, Size: f.Size, FromCache: f.FromCache}, err
	})
	switch {
	case errors.Is(err, regcache.ErrBypass):
		return nil, fmt.Errorf("%w: %w", httpcache.ErrBypass, err)
	case err != nil:
		return nil, err
	}
	return e, nil
}

// CountRequest counts r in the store's metrics.
func (s Local) CountRequest(r httpcache.Result) { s.C.CountRequest(regcache.Result(r)) }

var _ httpcache.TagStore = Local{}

// RememberTag records the registry's answer for repository:tag.
func (s Local) RememberTag(repository, tag, digest string, at time.Time) error {
	return s.C.RememberTag(repository, tag, digest, at)
}

// LookupTag returns what the store remembers of repository:tag.
func (s Local) LookupTag(repository, tag string) (string, time.Time, bool) {
	t, ok := s.C.LookupTag(repository, tag)
	return t.Digest, t.Confirmed, ok
}

var _ httpcache.FillWatcher = Local{}

// Filling reports whether digest is being filled.
func (s Local) Filling(digest string) bool { return s.C.Filling(digest) }
