package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/regcache"
)

// cacheStore is a route's regcache.Cache as the httpcache.Store of its
// cache link: the same content, in httpcache's terms.
type cacheStore struct{ c *regcache.Cache }

var _ httpcache.Store = cacheStore{}

func (s cacheStore) Get(ctx context.Context, digest string) (httpcache.Entry, bool) {
	e, ok := s.c.Get(ctx, digest)
	if !ok {
		return nil, false
	}
	return e, true
}

func (s cacheStore) Fill(ctx context.Context, digest string, fetch httpcache.FetchFunc) (httpcache.Entry, error) {
	e, err := s.c.Fill(ctx, digest, func(ctx context.Context) (regcache.Fetched, error) {
		f, err := fetch(ctx)
		return regcache.Fetched{Body: f.Body, Header: f.Header, Size: f.Size}, err
	})
	switch {
	case errors.Is(err, regcache.ErrBypass):
		return nil, fmt.Errorf("%w: %w", httpcache.ErrBypass, err)
	case err != nil:
		return nil, err
	}
	return e, nil
}

func (s cacheStore) CountRequest(r httpcache.Result) { s.c.CountRequest(regcache.Result(r)) }

var _ httpcache.TagStore = cacheStore{}

func (s cacheStore) RememberTag(repository, tag, digest string, at time.Time) error {
	return s.c.RememberTag(repository, tag, digest, at)
}

func (s cacheStore) LookupTag(repository, tag string) (string, time.Time, bool) {
	t, ok := s.c.LookupTag(repository, tag)
	return t.Digest, t.Confirmed, ok
}

var _ httpcache.FillWatcher = cacheStore{}

func (s cacheStore) Filling(digest string) bool { return s.c.Filling(digest) }
