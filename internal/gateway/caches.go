package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/regcache"
)

// caches are the open stores of the routes with http.cache, kept across
// reloads (regcache holds a lock on its directory, and a reload must not
// lose its content or its fills in flight): one per route, reused while
// the route keeps its cache.dir, closed when the route or its directory
// goes away.
type caches struct {
	log *slog.Logger
	m   *regcache.Metrics
	// wait: started by an upgrade, whose previous process holds the
	// directories until it has drained; the stores bypass until then.
	wait bool

	mu   sync.Mutex
	open map[cacheKey]*regcache.Cache

	// shared are the routes' shared tiers (cache.shared), kept alike.
	shared *sharedTiers
}

// cacheKey is a store's route and directory.
type cacheKey struct{ route, dir string }

func newCaches(log *slog.Logger, m *regcache.Metrics, wait bool) *caches {
	return &caches{log: log, m: m, wait: wait, open: map[cacheKey]*regcache.Cache{}, shared: newSharedTiers(log, nil)}
}

// take returns route's store in c.Dir: the open one when the route had
// it (its max_size updated), else a newly opened one; the store of a
// directory the route left stays open for the generation in force until
// retain. A route renamed onto the directory of another route's store
// closes that one first (the directory's lock is one store's).
func (cs *caches) take(route string, c *config.Cache) (*regcache.Cache, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	k := cacheKey{route, c.Dir}
	if cur := cs.open[k]; cur != nil {
		cur.SetMaxSize(c.MaxSize)
		return cur, nil
	}
	for other := range cs.open {
		if other.dir == c.Dir {
			cs.closeLocked(other, other.route != route)
		}
	}
	rc, err := regcache.Open(regcache.Config{Route: route, Dir: c.Dir, MaxSize: c.MaxSize, WaitForLock: cs.wait, Logger: cs.log, Metrics: cs.m})
	if err != nil {
		return nil, &cacheDirError{err: err}
	}
	cs.open[k] = rc
	return rc, nil
}

// cacheDirError is a cache.dir the builders refuse; buildError reports it
// at routes[i].http.cache.dir.
type cacheDirError struct{ err error }

func (e *cacheDirError) Error() string { return e.err.Error() }
func (e *cacheDirError) Unwrap() error { return e.err }

// retain closes the stores that cfg (the configuration in force) does not
// have: routes removed, caches dropped, directories changed.
func (cs *caches) retain(cfg *config.Config) {
	want := map[cacheKey]bool{}
	routes := map[string]bool{}
	if cfg != nil {
		for i := range cfg.Routes {
			if rc := &cfg.Routes[i]; rc.HTTP != nil && rc.HTTP.Cache != nil {
				want[cacheKey{rc.Name, rc.HTTP.Cache.Dir}], routes[rc.Name] = true, true
			}
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for k := range cs.open {
		if !want[k] {
			cs.closeLocked(k, !routes[k.route])
		}
	}
}

// closeLocked closes k's store; series drops the route's metric series
// too (the route has no cache any more).
func (cs *caches) closeLocked(k cacheKey, series bool) {
	c := cs.open[k]
	delete(cs.open, k)
	if err := c.Close(); err != nil {
		cs.log.Warn("closing the cache", "route", k.route, "dir", k.dir, "err", err)
	}
	if series {
		cs.m.DeleteRoute(k.route)
	}
	cs.log.Info("cache closed", "route", k.route, "dir", k.dir)
}

// Stats returns the figures of every open store, by route name.
func (cs *caches) Stats() []regcache.Stats {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]regcache.Stats, 0, len(cs.open))
	for _, c := range cs.open {
		out = append(out, c.Stats())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Route < out[j].Route })
	return out
}

// Purge removes digest ("" for everything) from every open store and
// returns their figures after it.
func (cs *caches) Purge(digest string) ([]regcache.Stats, error) {
	cs.mu.Lock()
	var errs []error
	for _, c := range cs.open {
		var err error
		if digest == "" {
			_, _, err = c.PurgeAll()
		} else {
			_, err = c.Purge(digest)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("route %q: %w", c.Route(), err))
		}
	}
	cs.mu.Unlock()
	return cs.Stats(), errors.Join(errs...)
}

// checkCacheDir is what `check` says of a cache.dir without opening it
// (a running snigate holds its lock): a directory snigate can write, or
// one it can create.
func checkCacheDir(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if errors.Is(err, os.ErrNotExist) && d != filepath.Dir(d) {
			continue // created by Open: its nearest existing parent decides
		}
		switch {
		case err != nil:
			return fmt.Errorf("cache directory %s: %w: give a directory snigate can create and write", dir, err)
		case !fi.IsDir():
			return fmt.Errorf("cache directory %s: %s is not a directory: give a directory of its own", dir, d)
		case syscall.Access(d, 0x2|0x1) != nil: // W_OK|X_OK
			return fmt.Errorf("cache directory %s: %s is not writable by this user: give snigate write access (systemd ReadWritePaths=) or another directory", dir, d)
		}
		if err := writableFS(d); err != nil {
			return fmt.Errorf("cache directory %s: %w", dir, err)
		}
		return nil
	}
}

// CacheStats returns the figures of every http route's cache (the admin
// API's GET /api/cache).
func (g *Gateway) CacheStats() []regcache.Stats { return g.caches.Stats() }

// PurgeCache removes digest ("": all content) from every cache (the
// admin API's POST /api/cache/purge).
func (g *Gateway) PurgeCache(digest string) ([]regcache.Stats, error) {
	return g.caches.Purge(digest)
}
