package httpcache

import (
	"fmt"
	"net/http"
	"time"

	"github.com/snigate/snigate/oci"
)

// TagStore is a Store's optional capability, found by type assertion:
// it remembers the last digest the registry answered for each tag, with
// the time, across restarts (routes[].http.cache.tags). Without it the
// cache keeps no tags.
type TagStore interface {
	// RememberTag records that the registry answered repository:tag with
	// digest at time at. An error is the store's (logged by it); the tag
	// may be remembered anyway.
	RememberTag(repository, tag, digest string, at time.Time) error
	// LookupTag returns the digest last answered for repository:tag and
	// when; false when the tag is not remembered.
	LookupTag(repository, tag string) (digest string, confirmed time.Time, ok bool)
}

// rememberTag records the registry's answer to a manifest GET or HEAD by
// tag: a 200 with a Docker-Content-Digest (for a GET, one the body hashed
// to, checked by the caller).
func (c *Cache) rememberTag(req request, status int, h http.Header) {
	ts, ok := c.cfg.Store.(TagStore)
	if !ok || c.cfg.Tags <= 0 || status != http.StatusOK {
		return
	}
	d := h.Get("Docker-Content-Digest")
	if !oci.ValidDigest(d) || !oci.ValidTag(req.API.Reference) {
		return
	}
	_ = ts.RememberTag(req.API.Repository, req.API.Reference, d, c.now())
}

// serveRememberedTag answers a manifest by tag that no upstream answered
// (err) from the tag's remembered digest, when it was confirmed within
// Tags and the store holds it (offline); else 503 saying why. It reports
// whether the tag was answered from memory.
func (c *Cache) serveRememberedTag(w http.ResponseWriter, r *http.Request, req request, err error) bool {
	ts, ok := c.cfg.Store.(TagStore)
	if !ok || c.cfg.Tags <= 0 {
		return false
	}
	ref := req.API.Repository + ":" + req.API.Reference
	d, at, ok := ts.LookupTag(req.API.Repository, req.API.Reference)
	if !ok {
		return false
	}
	req.ann.SetDigest(d)
	if age := c.now().Sub(at); age > c.cfg.Tags {
		req.ann.Fail(err, false)
		oci.WriteError(w, http.StatusServiceUnavailable, oci.CodeUnavailable, fmt.Sprintf(
			"no upstream answers and the tag %s was last confirmed by the registry %s ago (%s), longer than cache.tags (%s): reconnect the registry, raise cache.tags, or pull by digest (%s@%s): %v",
			ref, age.Round(time.Second), at.UTC().Format(time.RFC3339), c.cfg.Tags, req.API.Repository, d, err))
		return true
	}
	e, ok := c.cfg.Store.Get(r.Context(), d)
	if !ok {
		req.ann.Fail(err, false)
		oci.WriteError(w, http.StatusServiceUnavailable, oci.CodeUnavailable, fmt.Sprintf(
			"no upstream answers and the cache does not hold %s, the tag %s's last digest: %v", d, ref, err))
		return true
	}
	c.log.Warn("answered a tag from the cache's memory without the registry: no upstream answers (cache.offline, cache.tags)",
		"route", c.cfg.Route, "client", r.RemoteAddr, "repository", req.API.Repository,
		"reference", req.API.Reference, "digest", d, "confirmed", at.UTC().Format(time.RFC3339), "err", err)
	c.cfg.Store.CountRequest(Offline)
	req.ann.SetCache(string(Offline))
	c.serveEntry(w, r, req, e, nil)
	return true
}

// now is Config.NowFunc's time, else the clock's.
func (c *Cache) now() time.Time {
	if c.cfg.NowFunc != nil {
		return c.cfg.NowFunc()
	}
	return time.Now()
}
