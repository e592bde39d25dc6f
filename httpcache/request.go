package httpcache

import (
	"context"
	"fmt"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// request is one node request the cache link serves: its parsed path,
// the rest of the chain (next), the RoundTripper of the cache's own
// requests, and the request's annotation (nil-safe).
type request struct {
	API      oci.API
	next     http.Handler
	upstream http.RoundTripper
	ann      *oci.Annotation
}

// upstreamRequest returns a request of the cache's own for r's path, to
// send through upstream: method (HEAD to ask the registry, GET to fill)
// with the node's headers, Authorization included, less the hop-by-hop,
// conditional and Range headers (droppedHeaders). The upstream sets the
// forwarding headers. Its context is ctx, which must carry r's values
// (r.Context(), or a context.WithoutCancel of it) so that the upstream
// that answered is recorded in r's audit record.
func upstreamRequest(ctx context.Context, r *http.Request, method string) (*http.Request, error) {
	u := *r.URL
	u.Scheme, u.Host = "https", r.Host
	out, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("cache request for %s: %w", r.URL.Path, err)
	}
	out.Host = r.Host
	out.Header = r.Header.Clone()
	for _, k := range oci.HopByHopHeaders {
		out.Header.Del(k)
	}
	for _, k := range droppedHeaders {
		out.Header.Del(k)
	}
	return out, nil
}

// droppedHeaders are, beside the hop-by-hop ones, not copied from the
// node's request into the cache's own: those that would make the
// registry answer with less than the whole content, or encoded.
var droppedHeaders = []string{
	"Range", "If-Range", "If-Match", "If-None-Match",
	"If-Modified-Since", "If-Unmodified-Since", "Content-Length", "Accept-Encoding",
}

// roundTrip sends the cache's own request for r's path through the
// upstream.
func (req request) roundTrip(ctx context.Context, r *http.Request, method string) (*http.Response, error) {
	out, err := upstreamRequest(ctx, r, method)
	if err != nil {
		return nil, err
	}
	return req.upstream.RoundTrip(out)
}
