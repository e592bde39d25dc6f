package httpcache

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/snigate/snigate/oci"
)

// Config describes one route's cache. Store is required.
type Config struct {
	// Route names the route in log lines.
	Route string
	// Store holds the content (the route's store, kept across reloads by
	// the gateway).
	Store Store
	// Offline serves cached content without the registry's HEAD when no
	// upstream answers (routes[].http.cache.offline), and answers
	// GET /v2/ with 200 {} then.
	Offline bool
	// Tags is how long a tag's last digest answers the tag when no
	// upstream answers and Offline is set (routes[].http.cache.tags),
	// counted from the registry's last answer to it; the Store keeps
	// the tags (TagStore). Zero: no tags remembered, a tag gets 503
	// then.
	Tags time.Duration
	// NowFunc is the clock of the tags' ages. Nil: time.Now.
	NowFunc func() time.Time
	// Log receives the per-request offline lines. Nil: slog.Default().
	Log *slog.Logger
}

// Cache is one route's cache, a link of the route's HTTP chain (Wrap).
// It is safe for concurrent use and holds no state of its own beyond its
// Config: a reload builds a new one over the same Store.
type Cache struct {
	cfg Config
	log *slog.Logger
}

// New returns the cache of cfg.
func New(cfg Config) (*Cache, error) {
	if cfg.Store == nil {
		return nil, errors.New("httpcache: Config.Store is nil: give the route's content store")
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Cache{cfg: cfg, log: log}, nil
}

// Wrap returns the cache's link in front of next, the rest of the chain
// (the proxy to the registry), reaching the registry for the cache's own
// requests (the HEAD that asks, the GET that fills) through upstream. It
// answers GET and HEAD of a blob or a manifest by digest from the store;
// a manifest by tag from the registry, filling the store with its
// answer; GET /v2/ when offline; everything else goes to next. The
// request's result is its annotation's cache word ("" when next
// answered).
func (c *Cache) Wrap(next http.Handler, upstream http.RoundTripper) http.Handler {
	return &link{c: c, next: next, upstream: upstream}
}

// link is the cache's http.Handler.
type link struct {
	c        *Cache
	next     http.Handler
	upstream http.RoundTripper
}

func (l *link) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		l.next.ServeHTTP(w, r)
		return
	}
	c := l.c
	req := request{API: oci.RequestAPI(r), next: l.next, upstream: l.upstream, ann: oci.AnnotationFrom(r.Context())}
	switch {
	case req.API.Digest != "" && (req.API.Kind == oci.KindBlob || req.API.Kind == oci.KindManifest):
		if res := c.serveDigest(w, r, req); res != "" {
			c.cfg.Store.CountRequest(res)
			req.ann.SetCache(string(res))
		}
		return
	case req.API.Kind == oci.KindManifest:
		c.serveTag(w, r, req)
		return
	case req.API.Kind == oci.KindBase && c.cfg.Offline:
		req.ann.SetCache(c.serveBase(w, r, req))
		return
	}
	l.next.ServeHTTP(w, r)
}
