package httpbridge

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// probeUserAgent is the User-Agent of Probe's request.
const probeUserAgent = "snigate-probe"

// Probe requests GET /v2/ through the route's own client (healthy
// upstreams in balance order, retries, redirects) with Host set to the
// upstream server name, and returns the answer's status and headers
// (snigate check --probe). A registry that wants a token answers 401
// with its WWW-Authenticate challenge.
func (b *Bridge) Probe(ctx context.Context) (int, http.Header, error) {
	hosts := b.cfg.Upstreams.Candidates()
	if len(hosts) == 0 {
		return 0, nil, fmt.Errorf("route %q: %w", b.cfg.Route, ErrNoUpstream)
	}
	host := b.client.serverName(hosts[0].Addr())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+hostHeader(host)+"/v2/", nil)
	if err != nil {
		return 0, nil, fmt.Errorf("route %q: probe: %w", b.cfg.Route, err)
	}
	req.Header.Set("User-Agent", probeUserAgent)
	resp, err := b.client.RoundTrip(req)
	if err != nil {
		return 0, nil, fmt.Errorf("probe GET /v2/: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

// hostHeader brackets an IPv6 literal for use as a URL host.
func hostHeader(host string) string {
	for i := 0; i < len(host); i++ {
		if host[i] == ':' {
			return "[" + host + "]"
		}
	}
	return host
}
