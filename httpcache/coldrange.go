package httpcache

import (
	"context"
	"net/http"
	"sync"
)

// serveColdRange answers a GET with a Range of a digest the store does
// not hold (the registry said yes): the range comes at once from the
// registry through next, as without a cache, while one whole fill of the
// digest goes on beside it (Store.Fill starts it, or joins the one in
// flight: one fetch per digest however many ranges ask). Lazy-pulling
// snapshotters (SOCI, eStargz, nydus) read ranges of cold blobs and would
// otherwise wait for the whole fill.
func (c *Cache) serveColdRange(w http.ResponseWriter, r *http.Request, req request) Result {
	var wg sync.WaitGroup
	wg.Go(func() { c.fillBeside(r, req) })
	req.next.ServeHTTP(w, r)
	wg.Wait() // the fill's start (its answer's header): it goes on in the store
	return Miss
}

// fillBeside starts (or joins) the digest's whole fill, without the
// node's cancellation, and lets it go on in the store.
func (c *Cache) fillBeside(r *http.Request, req request) {
	e, err := c.cfg.Store.Fill(context.WithoutCancel(r.Context()), req.API.Digest, c.fetch(r, req))
	if err != nil {
		return // the store counts and logs its errors; the range was the node's answer
	}
	_ = e.Close()
}

// FillWatcher is a Store's optional capability, found by type
// assertion: Filling reports whether digest's fill is in flight. A node
// asking a range of it joins that fill (and is served from it, verified)
// instead of the registry; without it every range of content not stored
// goes to the registry.
type FillWatcher interface {
	Filling(digest string) bool
}

// coldRange reports whether r asks ranges of a digest the store neither
// holds nor fills: served by serveColdRange.
func (c *Cache) coldRange(r *http.Request, digest string) bool {
	if r.Method != http.MethodGet || r.Header.Get("Range") == "" {
		return false
	}
	fw, ok := c.cfg.Store.(FillWatcher)
	return !ok || !fw.Filling(digest)
}
