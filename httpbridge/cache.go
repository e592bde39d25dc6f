package httpbridge

import "net/http"

// Cache is the optional content store in front of the registry
// (routes[].http.cache; package regcache implements it). The bridge calls
// it for every request the route's policy admitted.
type Cache interface {
	// ServeCache answers r, whose path parsed as req.API, and returns the
	// audit record's cache word: "hit", "miss", "bypass" or "offline". It
	// may answer from its store, or fill it through req.Upstream, or hand
	// r to req.Proxy, which forwards it to the registry exactly as a
	// route without a cache does and streams the answer to w.
	ServeCache(w http.ResponseWriter, r *http.Request, req CacheRequest) string
}

// CacheRequest is what the bridge gives a Cache with each request.
type CacheRequest struct {
	API API
	// Proxy forwards the request to the registry as without a cache
	// (forwarded headers, healthy upstreams with retries, redirects).
	Proxy http.Handler
	// Upstream sends a request of the cache's own to the route's healthy
	// upstreams with the same retries and redirects; its URL's host is
	// replaced by the upstream's address and its Host header is kept.
	// The cache sets the forwarding headers it wants itself.
	Upstream http.RoundTripper
}
