package httpcache

import (
	"errors"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// serveDigest answers a GET or HEAD of a blob or a manifest by digest and
// returns its result. The registry is asked first (HEAD, the node's
// headers): its 2xx lets the store serve, or fill; any other answer sends
// the request to the registry as without a cache; no answer at all is
// the offline case.
func (c *Cache) serveDigest(w http.ResponseWriter, r *http.Request, req request) Result {
	head, err := c.ask(r, req)
	if err != nil {
		if c.cfg.Offline && r.Context().Err() == nil {
			return c.serveOffline(w, r, req, err)
		}
		c.upstreamFailed(w, r, req, err)
		return Miss
	}
	if head.StatusCode/100 != 2 {
		req.next.ServeHTTP(w, r) // the registry's own answer, with its body
		return Miss
	}
	if e, ok := c.cfg.Store.Get(r.Context(), req.API.Digest); ok {
		c.serveEntry(w, r, req, e, head.Header)
		return Hit
	}
	if r.Method == http.MethodHead {
		relayHead(w, head)
		return Miss
	}
	if c.coldRange(r, req.API.Digest) {
		return c.serveColdRange(w, r, req)
	}
	return c.fillAndServe(w, r, req, head.Header)
}

// fillAndServe fills the digest from the registry (or joins its fill in
// flight) and serves the bytes as they arrive.
func (c *Cache) fillAndServe(w http.ResponseWriter, r *http.Request, req request, head http.Header) Result {
	e, err := c.cfg.Store.Fill(r.Context(), req.API.Digest, c.fetch(r, req))
	switch {
	case errors.Is(err, ErrBypass):
		req.next.ServeHTTP(w, r)
		return Bypass
	case err != nil:
		c.fillFailed(w, r, req, err)
		return Miss
	}
	res := Miss
	if e.Stored() {
		res = Hit // stored meanwhile
	}
	c.serveEntry(w, r, req, e, head)
	return res
}

// upstreamFailed answers a request no upstream answered, as the bridge's
// proxy does (503 when none is healthy, else 502).
func (c *Cache) upstreamFailed(w http.ResponseWriter, r *http.Request, req request, err error) {
	req.ann.Fail(err, false)
	if r.Context().Err() != nil {
		return // the node went away
	}
	oci.WriteUpstreamError(w, err)
}

// fillFailed answers a request whose fill failed before its first byte.
func (c *Cache) fillFailed(w http.ResponseWriter, r *http.Request, req request, err error) {
	req.ann.Fail(err, true)
	if r.Context().Err() != nil {
		return
	}
	if errors.Is(err, oci.ErrCredentialsRefused) { // routes[].http.auth: 401 UNAUTHORIZED, as the proxy answers
		oci.WriteUpstreamError(w, err)
		return
	}
	var st *statusError
	if errors.As(err, &st) && st.status/100 == 4 {
		oci.WriteError(w, st.status, oci.CodeDenied, err.Error())
		return
	}
	oci.WriteError(w, http.StatusBadGateway, oci.CodeUnavailable, oci.NodeMessage(err))
}
