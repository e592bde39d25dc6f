package httpbridge

import (
	"net/http"

	"github.com/snigate/snigate/oci"
)

// Chain builds the links between the route's policy and its proxy (the
// cache, routes[].http.cache): given next, the proxy, which forwards a
// request to the registry exactly as a route without links does, and
// upstream, the RoundTripper of a link's own requests, it returns the
// handler admitted requests go to. A link reads the request's parsed path
// with oci.RequestAPI and reports the facts of its audit record in the
// request's oci.Annotation. The gateway composes it; nil: the proxy
// alone.
type Chain func(next http.Handler, upstream http.RoundTripper) http.Handler

// linkUpstream is the upstream RoundTripper of the links: the route's
// upstream client (healthy upstreams in the pool's order, retries of GET
// and HEAD, redirects followed as the route says) after the forwarding
// headers the proxy sets (the node's own dropped; the gateway's from the
// node's address when routes[].http.forwarded). Its requests' URL host is
// replaced with the upstream's address, their Host header kept. A request
// whose context carries its node request's values (r.Context(), or a
// context.WithoutCancel of it) has the upstream that answered recorded
// in that request's annotation.
type linkUpstream struct{ b *Bridge }

func (u linkUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context()) // a RoundTripper leaves its request as it came
	oci.DropForwarding(out.Header)
	if nc := connFrom(out.Context()); u.b.cfg.Forwarded && nc != nil {
		nc.fwd.Set(out.Header)
	}
	return u.b.upstream.RoundTrip(out)
}

// chainHandler is what admitted requests go to: cfg.Chain over the
// proxy, or the proxy.
func (b *Bridge) chainHandler() http.Handler {
	if b.cfg.Chain == nil {
		return b.proxy
	}
	return b.cfg.Chain(b.proxy, linkUpstream{b: b})
}
