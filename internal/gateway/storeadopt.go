package gateway

import (
	"sort"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/s3tier"
)

// The cache stores' part of generation.Adopt: claimStores before the
// previous generation stops (what can fail), carryStores after (what
// crosses). A route keeps its local store while it keeps its cache.dir
// and its shared tier while cache.shared stays the same; everything else
// of the previous generation's closes when it retires.

// addStore records that rc (with http.cache) needs a store and returns
// it, for the route's cache link and pinner; Adopt fills it in.
func (gen *generation) addStore(rc *config.Route, b *builder) *routeStore {
	s := &routeStore{route: rc.Name, cache: *rc.HTTP.Cache, log: b.log, m: b.metrics.cache, tm: b.metrics.shared}
	gen.stores[rc.Name] = s
	return s
}

// store is the route's store, nil without one (or without gen).
func (gen *generation) store(route string) *routeStore {
	if gen == nil {
		return nil
	}
	return gen.stores[route]
}

// claimStores opens the local stores gen needs that prev does not hold
// and builds the shared tiers prev does not have; it changes nothing of
// prev. Its errors are at the routes' keys (routes[i].http.cache.dir, a
// directory another store holds; .shared); gen.retire closes what it
// opened.
func (gen *generation) claimStores(prev *generation) error {
	var errs config.ErrorList
	for i := range gen.cfg.Routes {
		s := gen.stores[gen.cfg.Routes[i].Name]
		if s == nil {
			continue
		}
		p := prev.store(s.route)
		err := gen.claimLocal(s, p, prev)
		if err == nil {
			err = s.claimTier(p)
		}
		if err != nil {
			errs = append(errs, buildError(gen.cfg, i, err))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (gen *generation) claimLocal(s, p *routeStore, prev *generation) error {
	switch {
	case p.holds(s.cache.Dir):
		return nil // kept: carryStores takes it
	case prev.holdsDir(s.cache.Dir) != nil:
		s.reopen = true // another route's: carryStores closes it first
		return nil
	}
	local, err := gen.open.openStore(s.route, &s.cache)
	if err != nil {
		return err
	}
	// Rejected, gen closes it; the route's series stay if prev has them.
	s.local, s.dropSeries = local, !p.holdsAny()
	return nil
}

// claimTier builds s's shared tier unless p's is the same (which opens
// nothing until it is used).
func (s *routeStore) claimTier(p *routeStore) error {
	sc := s.cache.Shared
	if sc == nil || p.sameTier(sc) {
		return nil
	}
	t, err := s3tier.New(tierConfig(s.route, sc, s.log, s.tm))
	if err != nil {
		return &sharedTierError{err: err}
	}
	s.tier, s.dropTierSeries = t, p == nil || p.tier == nil
	return nil
}

// carryStores takes over prev's stores and tiers that gen keeps, binds
// gen's, and marks prev's others to close (their series with them when
// gen's route has none) when prev retires.
func (gen *generation) carryStores(prev *generation) {
	for _, p := range prev.storeList() {
		s := gen.stores[p.route]
		p.dropSeries = s == nil
		p.dropTierSeries = s == nil || s.cache.Shared == nil
	}
	for _, s := range gen.storeList() {
		p := prev.store(s.route)
		switch {
		case p.holds(s.cache.Dir):
			s.local, p.localTaken = p.local, true
			s.local.SetMaxSize(s.cache.MaxSize)
		case s.reopen:
			gen.reopenDir(s, prev)
		}
		if s.cache.Shared != nil && s.tier == nil && p.sameTier(s.cache.Shared) {
			s.tier, p.tierTaken = p.tier, true
		}
		s.bind()
		s.dropSeries, s.dropTierSeries = true, true // in force: a shutdown drops them
	}
}

// reopenDir closes prev's store of s's directory (another route's: the
// lock is one store's) and opens s's. It cannot fail the reload any
// more: a failure is logged, and the route bypasses its cache.
func (gen *generation) reopenDir(s *routeStore, prev *generation) {
	s.reopen = false
	if o := prev.holdsDir(s.cache.Dir); o != nil {
		o.closeLocal()
		o.localTaken = true // closed here; retire leaves it
	}
	local, err := gen.open.openStore(s.route, &s.cache)
	if err != nil {
		s.log.Error("cache not opened; the route bypasses its cache", "route", s.route, "dir", s.cache.Dir, "err", err)
		return
	}
	s.local = local
}

// holds reports whether p's local store is open in dir and still p's.
func (p *routeStore) holds(dir string) bool {
	return p.holdsAny() && p.cache.Dir == dir
}

func (p *routeStore) holdsAny() bool {
	return p != nil && p.local != nil && !p.localTaken && !p.closed
}

// sameTier reports whether p has an open tier for sc.
func (p *routeStore) sameTier(sc *config.SharedCache) bool {
	return p != nil && p.tier != nil && !p.tierTaken && !p.closed && p.cache.Shared != nil && *p.cache.Shared == *sc
}

// holdsDir is gen's store holding dir, nil when none (or without gen).
func (gen *generation) holdsDir(dir string) *routeStore {
	for _, s := range gen.storeList() {
		if s.holds(dir) {
			return s
		}
	}
	return nil
}

// storeList is gen's stores by route name (none without gen).
func (gen *generation) storeList() []*routeStore {
	if gen == nil {
		return nil
	}
	out := make([]*routeStore, 0, len(gen.stores))
	for _, s := range gen.stores {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].route < out[j].route })
	return out
}
