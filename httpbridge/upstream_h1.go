package httpbridge

import (
	"net/http"
	"sync/atomic"
	"time"
)

// pooled is the route's upstream connections made under one upstream
// identity: the HTTP/1.1 pool (UpstreamHTTP1, UpstreamAuto) or the
// HTTP/2 one (UpstreamH2).
type pooled struct {
	identity  string
	transport *http.Transport
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
	return &pooled{identity: identity, transport: u.newH1Transport()}
}

// newH1Transport is the HTTP/1.1 pool: ALPN http/1.1 only, keep-alive,
// up to DefaultMaxIdleConnsPerHost idle connections per upstream. A
// request takes an idle connection when one exists and dials otherwise;
// a GET or HEAD sent on a pooled connection that the registry closed
// while it was idle is sent again on a new one by net/http (its
// "server closed idle connection" retry), which the node never sees.
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
	p.transport.CloseIdleConnections()
}
