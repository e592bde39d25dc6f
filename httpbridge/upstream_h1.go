package httpbridge

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/snigate/snigate/upstream"
)

// pooled is the route's upstream connections made under one upstream
// identity: the HTTP/1.1 pool (UpstreamHTTP1, UpstreamAuto) or the
// HTTP/2 one (UpstreamH2).
type pooled struct {
	identity  string
	transport *http.Transport
	// h1, HTTP/1.1 pool only, carries the requests that can be sent again
	// (canRetry: GET and HEAD without a body) over its own connections,
	// in the request's goroutine; transport carries those with a body:
	// it writes the body while it reads the answer, which a registry
	// refusing an upload early needs.
	h1 *upPool
	// retired: a rotation replaced the pool, or the bridge was closed;
	// each request that ends closes the idle connections.
	retired atomic.Bool
}

// newPooled is the pool of the protocol Config.UpstreamProtocol names.
// UpstreamAuto is HTTP/1.1 for every request: BenchmarkUpstreamProtocol
// measured the registry's CPU per request 1.5-2.8x higher over HTTP/2,
// for manifests and blobs alike, and the gateway's no lower
// (bench/RESULTS.md, "Lever 1"): no kind of request is worth HTTP/2.
func (u *upstreamClient) newPooled(identity string) *pooled {
	if u.cfg.UpstreamProtocol == UpstreamH2 {
		return &pooled{identity: identity, transport: u.newH2Transport()}
	}
	return &pooled{identity: identity, transport: u.newH1Transport(), h1: newUpPool(u.dialSlots, u.dialH1)}
}

// dialSlots is the route's bound on dials in progress (tests replace it).
func (u *upstreamClient) dialSlots() *dialSlots { return u.dials }

// dialH1 is a new connection of the h1 pool to h, whose caller holds a
// dial slot: dialHeld offering http/1.1 only, under the request's
// context, with h for passive health.
func (u *upstreamClient) dialH1(ctx context.Context, addr string, h *upstream.Host) (net.Conn, error) {
	if h != nil {
		ctx = context.WithValue(ctx, hostKey{}, h)
	}
	return u.dialHeld(ctx, "tcp", addr, alpnH1)
}

// roundTrip sends a copy of req with the attempt's URL (to) to h over the
// pool: a request that can be sent again over h1 when p has it, any
// other over transport, whose dials find h in the copy's context.
func (p *pooled) roundTrip(req *http.Request, to *url.URL, h *upstream.Host, timeout time.Duration) (*http.Response, error) {
	if p.h1 != nil && canRetry(req) {
		out := req.WithContext(req.Context())
		out.URL = to
		return p.h1.roundTrip(out, h, timeout)
	}
	out := req.WithContext(context.WithValue(req.Context(), hostKey{}, h))
	out.URL = to
	return p.transport.RoundTrip(out)
}

// newH1Transport is the HTTP/1.1 pool's transport for requests with a
// body: ALPN http/1.1 only, keep-alive, up to DefaultMaxIdleConnsPerHost
// idle connections per upstream.
func (u *upstreamClient) newH1Transport() *http.Transport {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	return &http.Transport{
		DialTLSContext:        u.dialFunc(alpnH1),
		Protocols:             protocols,
		MaxIdleConnsPerHost:   DefaultMaxIdleConnsPerHost,
		IdleConnTimeout:       DefaultUpstreamIdleTimeout,
		DisableCompression:    true, // Accept-Encoding and bodies pass untouched
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: u.cfg.ResponseHeaderTimeout,
	}
}

// retire marks p replaced and closes its idle connections; its busy ones
// close when their requests end (releaseBody).
func (p *pooled) retire() {
	p.retired.Store(true)
	if p.h1 != nil {
		p.h1.retire()
	}
	p.transport.CloseIdleConnections()
}

// closeIdle closes the idle connections of both of p's pools.
func (p *pooled) closeIdle() {
	if p.h1 != nil {
		p.h1.closeIdle()
	}
	p.transport.CloseIdleConnections()
}
