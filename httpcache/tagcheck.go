package httpcache

import (
	"io"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// maxHeadBody bounds what is read of a HEAD answer's body (none is
// expected) to reuse its connection.
const maxHeadBody = 4 << 10

// serveTagFromStore answers a GET of a manifest by tag from the store
// when the registry, asked with HEAD (the node's headers: its Accept
// decides which manifest the tag names), answers 2xx with a
// Docker-Content-Digest the store holds: the pull budget of registries
// that count manifest GETs and not HEADs (Docker Hub). It reports
// whether it answered; false (nothing written) sends the GET to the
// registry as before: no digest in the answer, one the store does not
// hold, a HEAD that failed (the GET reports the failure).
func (c *Cache) serveTagFromStore(w http.ResponseWriter, r *http.Request, req request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	head, err := req.roundTrip(r.Context(), r, http.MethodHead)
	if err != nil {
		return false
	}
	_, _ = io.CopyN(io.Discard, head.Body, maxHeadBody)
	_ = head.Body.Close()
	d := head.Header.Get("Docker-Content-Digest")
	if head.StatusCode/100 != 2 || !oci.ValidDigest(d) {
		return false
	}
	c.rememberTag(req, head.StatusCode, head.Header)
	e, ok := c.cfg.Store.Get(r.Context(), d)
	if !ok {
		return false
	}
	req.ann.SetDigest(d)
	req.ann.SetCache(string(Hit))
	c.cfg.Store.CountRequest(Hit)
	c.serveEntry(w, r, req, e, head.Header)
	return true
}
