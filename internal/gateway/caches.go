package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/snigate/snigate/regcache"
)

// cacheDirError is a cache.dir the builders refuse; buildError reports it
// at routes[i].http.cache.dir.
type cacheDirError struct{ err error }

func (e *cacheDirError) Error() string { return e.err.Error() }
func (e *cacheDirError) Unwrap() error { return e.err }

// cacheStats returns the figures of the generation's open stores, by
// route name.
func (gen *generation) cacheStats() []regcache.Stats {
	out := []regcache.Stats{}
	for _, s := range gen.storeList() {
		if s.local != nil {
			out = append(out, s.local.Stats())
		}
	}
	return out
}

// purgeCaches removes digest ("" for everything) from every open store
// of the generation and returns their figures after it.
func (gen *generation) purgeCaches(digest string) ([]regcache.Stats, error) {
	var errs []error
	for _, s := range gen.storeList() {
		if s.local == nil {
			continue
		}
		var err error
		if digest == "" {
			_, _, err = s.local.PurgeAll()
		} else {
			_, err = s.local.Purge(digest)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("route %q: %w", s.route, err))
		}
	}
	return gen.cacheStats(), errors.Join(errs...)
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
func (g *Gateway) CacheStats() []regcache.Stats { return g.gen.Load().cacheStats() }

// PurgeCache removes digest ("": all content) from every cache (the
// admin API's POST /api/cache/purge).
func (g *Gateway) PurgeCache(digest string) ([]regcache.Stats, error) {
	return g.gen.Load().purgeCaches(digest)
}
