package s3tier

import (
	"context"
	"errors"

	"github.com/snigate/snigate/httpcache"
)

// Tiered is a route's store with a shared tier: Local (the gateway's own
// disk) first, then Shared, then the registry. A Get that misses Local
// but finds the content in Shared fills Local from it, verified, and
// serves it from Local; a Fill writes both tiers (Local as without a
// shared tier, Shared by an upload completed only once verified), with one
// registry fetch per digest for every gateway of the bucket. With Local
// unavailable (ErrBypass) requests go to the registry as without a cache.
type Tiered struct {
	Local  httpcache.Store
	Shared *Tier
}

var _ httpcache.Store = (*Tiered)(nil)

// Get returns Local's content, or Shared's copied into Local and
// verified; false when neither holds it (or Shared fails: counted).
func (s *Tiered) Get(ctx context.Context, dgst string) (httpcache.Entry, bool) {
	if e, ok := s.Local.Get(ctx, dgst); ok {
		return e, true
	}
	d, err := parseDigest(dgst)
	if err != nil {
		return nil, false
	}
	t := s.Shared
	oi, ok, err := t.stat(ctx, d)
	switch {
	case err != nil:
		t.failed("stat", d, err)
		return nil, false
	case !ok:
		t.m.requests(resultMiss)
		return nil, false
	}
	e, err := s.Local.Fill(ctx, dgst, func(ctx context.Context) (httpcache.Fetched, error) {
		f, err := t.open(ctx, d, oi)
		if err != nil && !errors.Is(err, errCorrupt) {
			t.failed("read", d, err)
		}
		return f, err
	})
	if err != nil {
		return nil, false
	}
	verr := e.Verified()
	e.Close()
	if verr != nil {
		return nil, false
	}
	return s.Local.Get(ctx, dgst)
}

// Fill is Local's fill of dgst with the fleet's fetch: Shared's content,
// or the registry's under the digest's lease (uploaded to Shared), or
// another gateway's once it is in Shared.
func (s *Tiered) Fill(ctx context.Context, dgst string, fetch httpcache.FetchFunc) (httpcache.Entry, error) {
	d, err := parseDigest(dgst)
	if err != nil {
		return s.Local.Fill(ctx, dgst, fetch)
	}
	return s.Local.Fill(ctx, dgst, s.Shared.fetchFunc(d, fetch))
}

// CountRequest counts in Local (snigate_cache_requests_total).
func (s *Tiered) CountRequest(r httpcache.Result) { s.Local.CountRequest(r) }
