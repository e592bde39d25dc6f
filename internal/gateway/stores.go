package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/internal/cachestore"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/regcache"
	"github.com/snigate/snigate/s3tier"
)

// routeStore is an http route's cache as its generation owns it: the
// build records what the route needs (its cache.dir, max_size and
// cache.shared) and gives the route's cache link and pinner this store;
// generation.Adopt fills it in (storeadopt.go) with the local store it
// opens, or takes over from the generation before when the route keeps
// its cache.dir (the directory's lock is one store's), and with the
// shared tier it builds, or takes over when cache.shared is the same.
// The build's objects use it from the generation's start on, so nothing
// is written after that but by Adopt of the next generation, which only
// marks what it took.
//
// Unbound (check opens no store; a directory that could not be opened
// again, see reopen), the route's requests bypass the cache.
type routeStore struct {
	route string
	cache config.Cache // the route's http.cache
	log   *slog.Logger
	m     *regcache.Metrics
	tm    *s3tier.Metrics

	local *regcache.Cache // opened or taken by Adopt; nil: unbound
	tier  *s3tier.Tier    // cache.shared's, nil without it
	st    httpcache.Store // local, under tier when there is one; nil: unbound

	// reopen: local's directory is held by the previous generation's
	// store of another route (a route renamed); Adopt's carry closes
	// that one and opens this route's.
	reopen bool
	// localTaken, tierTaken: the next generation took them over; retire
	// leaves them open.
	localTaken, tierTaken bool
	// dropSeries, dropTierSeries: closing drops the route's series (the
	// generation in force after this one has no such store for it).
	dropSeries, dropTierSeries bool
	closed                     bool
}

var (
	_ httpcache.Store       = (*routeStore)(nil)
	_ httpcache.TagStore    = (*routeStore)(nil)
	_ httpcache.FillWatcher = (*routeStore)(nil)
)

// bind composes the store the route's cache link reads: local, under
// the shared tier when there is one; unbound without local.
func (s *routeStore) bind() {
	if s.local == nil {
		s.st = nil
		return
	}
	var st httpcache.Store = cachestore.Local{C: s.local}
	if s.tier != nil {
		st = &s3tier.Tiered{Local: st, Shared: s.tier}
	}
	s.st = st
}

// Get returns the bound store's content of digest.
func (s *routeStore) Get(ctx context.Context, digest string) (httpcache.Entry, bool) {
	if s.st == nil {
		return nil, false
	}
	return s.st.Get(ctx, digest)
}

// Fill fills digest in the bound store; unbound, it bypasses.
func (s *routeStore) Fill(ctx context.Context, digest string, fetch httpcache.FetchFunc) (httpcache.Entry, error) {
	if s.st == nil {
		return nil, fmt.Errorf("%w: route %q: its cache store is not open", httpcache.ErrBypass, s.route)
	}
	return s.st.Fill(ctx, digest, fetch)
}

// CountRequest counts r in the bound store.
func (s *routeStore) CountRequest(r httpcache.Result) {
	if s.st != nil {
		s.st.CountRequest(r)
	}
}

// RememberTag records a tag in the bound store, when it keeps tags.
func (s *routeStore) RememberTag(repository, tag, digest string, at time.Time) error {
	if ts, ok := s.st.(httpcache.TagStore); ok {
		return ts.RememberTag(repository, tag, digest, at)
	}
	return nil
}

// LookupTag returns what the bound store remembers of repository:tag.
func (s *routeStore) LookupTag(repository, tag string) (string, time.Time, bool) {
	if ts, ok := s.st.(httpcache.TagStore); ok {
		return ts.LookupTag(repository, tag)
	}
	return "", time.Time{}, false
}

// Filling reports whether the bound store fills digest now.
func (s *routeStore) Filling(digest string) bool {
	fw, ok := s.st.(httpcache.FillWatcher)
	return ok && fw.Filling(digest)
}

// close closes what the generation still owns of the route's cache (not
// what the next generation took), once.
func (s *routeStore) close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.local != nil && !s.localTaken {
		s.closeLocal()
	}
	if s.tier != nil && !s.tierTaken {
		s.tier.Close()
		if s.dropTierSeries {
			s.tm.DeleteRoute(s.route)
		}
		s.log.Info("shared cache tier closed", "route", s.route, "endpoint", s.cache.Shared.Endpoint, "bucket", s.cache.Shared.Bucket)
	}
}

// closeLocal closes the local store, and its series with dropSeries.
func (s *routeStore) closeLocal() {
	if err := s.local.Close(); err != nil {
		s.log.Warn("closing the cache", "route", s.route, "dir", s.cache.Dir, "err", err)
	}
	if s.dropSeries {
		s.m.DeleteRoute(s.route)
	}
	s.log.Info("cache closed", "route", s.route, "dir", s.cache.Dir)
}
