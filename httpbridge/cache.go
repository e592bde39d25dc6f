package httpbridge

import (
	"context"
	"fmt"
	"net/http"

	"github.com/snigate/snigate/oci"
)

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
	API oci.API
	// Proxy forwards the request to the registry as without a cache
	// (forwarded headers, healthy upstreams with retries, redirects).
	Proxy http.Handler
	// Upstream sends a request of the cache's own to the route's healthy
	// upstreams with the same retries and redirects; its URL's host is
	// replaced by the upstream's address and its Host header is kept.
	// UpstreamRequest builds its requests with the bridge's forwarding
	// headers.
	Upstream http.RoundTripper

	forwarded bool      // routes[].http.forwarded
	ex        *exchange // r's audit facts; nil-safe
}

// UpstreamRequest returns a request of the cache's own for r's path, to
// send through Upstream: method (HEAD to ask the registry, GET to fill)
// with the node's headers, Authorization included, less the hop-by-hop,
// conditional and Range headers, and with the forwarding headers the
// bridge sets on the requests it proxies (the node's own dropped). Its
// context is ctx, which must carry r's values (r.Context(), or a
// context.WithoutCancel of it) so that the upstream that answered is
// recorded in r's audit record.
func (c CacheRequest) UpstreamRequest(ctx context.Context, r *http.Request, method string) (*http.Request, error) {
	u := *r.URL
	u.Scheme, u.Host = "https", r.Host
	out, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("cache request for %s: %w", r.URL.Path, err)
	}
	out.Host = r.Host
	out.Header = r.Header.Clone()
	for _, k := range cacheDroppedHeaders {
		out.Header.Del(k)
	}
	oci.DropForwarding(out.Header)
	if nc := connFrom(r.Context()); c.forwarded && nc != nil {
		oci.SetForwarded(out.Header, nc.ip)
	}
	return out, nil
}

// cacheDroppedHeaders are not copied from the node's request into the
// cache's own: hop-by-hop headers, and those that would make the
// registry answer with less than the whole content, or encoded.
var cacheDroppedHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "Range", "If-Range", "If-Match", "If-None-Match",
	"If-Modified-Since", "If-Unmodified-Since", "Content-Length", "Accept-Encoding",
}

// SetDigest records, for r's audit record, the digest of an answer the
// cache relayed itself (a manifest by tag).
func (c CacheRequest) SetDigest(digest string) { c.ex.setDigest(digest) }

// Fail records, for r's audit record, why the request failed; upstream
// marks a failure of the upstream mid-body (the node's connection then
// ends as aborted by the upstream).
func (c CacheRequest) Fail(err error, upstream bool) { c.ex.fail(err, upstream) }
