package httpcache

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/oci"
	"github.com/snigate/snigate/regcache"
)

// Store is what the cache needs of its content store; *regcache.Cache
// implements it.
type Store interface {
	Get(ctx context.Context, digest string) (*regcache.Entry, bool)
	Fill(ctx context.Context, digest string, fetch regcache.FetchFunc) (*regcache.Entry, error)
	CountRequest(r regcache.Result)
}

var _ Store = (*regcache.Cache)(nil)

// Config describes one route's cache. Store is required.
type Config struct {
	// Route names the route in log lines.
	Route string
	// Store holds the content (the route's regcache.Cache, kept across
	// reloads by the gateway).
	Store Store
	// Offline serves cached content without the registry's HEAD when no
	// upstream answers (routes[].http.cache.offline), and answers
	// GET /v2/ with 200 {} then.
	Offline bool
	// Log receives the per-request offline lines. Nil: slog.Default().
	Log *slog.Logger
}

// Cache serves one route's cacheable requests; it is the route's
// httpbridge.Cache. It is safe for concurrent use and holds no state of
// its own beyond its Config: a reload builds a new one over the same
// Store.
type Cache struct {
	cfg Config
	log *slog.Logger
}

var _ httpbridge.Cache = (*Cache)(nil)

// New returns the cache of cfg.
func New(cfg Config) (*Cache, error) {
	if cfg.Store == nil {
		return nil, errors.New("httpcache: Config.Store is nil: give the route's regcache.Cache")
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Cache{cfg: cfg, log: log}, nil
}

// ServeCache answers r (see httpbridge.Cache): GET and HEAD of a blob or
// a manifest by digest from the store; a manifest by tag from the
// registry, filling the store with its answer; GET /v2/ when offline;
// everything else through req.Proxy, with the cache word "".
func (c *Cache) ServeCache(w http.ResponseWriter, r *http.Request, req httpbridge.CacheRequest) string {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		req.Proxy.ServeHTTP(w, r)
		return ""
	}
	switch {
	case req.API.Digest != "" && (req.API.Kind == oci.KindBlob || req.API.Kind == oci.KindManifest):
		res := c.serveDigest(w, r, req)
		if res != "" {
			c.cfg.Store.CountRequest(res)
		}
		return string(res)
	case req.API.Kind == oci.KindManifest:
		c.serveTag(w, r, req)
		return ""
	case req.API.Kind == oci.KindBase && c.cfg.Offline:
		return c.serveBase(w, r, req)
	}
	req.Proxy.ServeHTTP(w, r)
	return ""
}
