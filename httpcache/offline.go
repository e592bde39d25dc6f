package httpcache

import (
	"fmt"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// serveOffline answers a digest request no upstream answered (err) with
// Offline set: cached content without the registry's check, logged, or
// 503 with an OCI error body when the store does not hold it.
func (c *Cache) serveOffline(w http.ResponseWriter, r *http.Request, req request, err error) Result {
	e, ok := c.cfg.Store.Get(r.Context(), req.API.Digest)
	if !ok {
		req.ann.Fail(err, false)
		oci.WriteError(w, http.StatusServiceUnavailable, oci.CodeUnavailable,
			fmt.Sprintf("no upstream answers and the cache does not hold %s: %v", req.API.Digest, err))
		return Miss
	}
	c.log.Warn("served from the cache without asking the registry: no upstream answers (cache.offline)",
		"route", c.cfg.Route, "client", r.RemoteAddr, "repository", req.API.Repository,
		"digest", req.API.Digest, "err", err)
	c.serveEntry(w, r, req, e, nil)
	return Offline
}

// serveBase answers GET /v2/ with Offline set: the registry's answer
// while an upstream answers, else 200 {} so that clients go on to the
// content the cache holds.
func (c *Cache) serveBase(w http.ResponseWriter, r *http.Request, req request) string {
	resp, err := req.roundTrip(r.Context(), r, r.Method)
	if err == nil {
		relay(w, r, req, resp)
		return ""
	}
	if r.Context().Err() != nil {
		req.ann.Fail(err, false)
		return ""
	}
	c.log.Warn("answered GET /v2/ without the registry: no upstream answers (cache.offline)",
		"route", c.cfg.Route, "client", r.RemoteAddr, "err", err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Docker-Distribution-Api-Version", "registry/2.0")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte("{}"))
	}
	return string(Offline)
}
