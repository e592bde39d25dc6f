package httpcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snigate/snigate/regcache"
)

// regStore is the test world's regcache.Cache as its Store (the gateway has the
// same adapter: httpcache imports no store).
type regStore struct{ c *regcache.Cache }

var _ Store = regStore{}

func (s regStore) Get(ctx context.Context, digest string) (Entry, bool) {
	e, ok := s.c.Get(ctx, digest)
	if !ok {
		return nil, false
	}
	return e, true
}

func (s regStore) Fill(ctx context.Context, digest string, fetch FetchFunc) (Entry, error) {
	e, err := s.c.Fill(ctx, digest, func(ctx context.Context) (regcache.Fetched, error) {
		f, err := fetch(ctx)
		return regcache.Fetched{Body: f.Body, Header: f.Header, Size: f.Size}, err
	})
	switch {
	case errors.Is(err, regcache.ErrBypass):
		return nil, fmt.Errorf("%w: %w", ErrBypass, err)
	case err != nil:
		return nil, err
	}
	return e, nil
}

func (s regStore) CountRequest(r Result) { s.c.CountRequest(regcache.Result(r)) }

var _ TagStore = regStore{}

func (s regStore) RememberTag(repository, tag, digest string, at time.Time) error {
	return s.c.RememberTag(repository, tag, digest, at)
}

func (s regStore) LookupTag(repository, tag string) (string, time.Time, bool) {
	t, ok := s.c.LookupTag(repository, tag)
	return t.Digest, t.Confirmed, ok
}

var _ FillWatcher = regStore{}

func (s regStore) Filling(digest string) bool { return s.c.Filling(digest) }
