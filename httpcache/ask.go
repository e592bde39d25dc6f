package httpcache

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// ask sends HEAD for r's path to the registry with the node's headers:
// the registry's answer decides whether the node may read the content.
// An error means no upstream answered.
func (c *Cache) ask(r *http.Request, req request) (*http.Response, error) {
	resp, err := req.roundTrip(r.Context(), r, http.MethodHead)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp, nil
}

// statusError is a fill whose GET the registry answered with another
// status than 200.
type statusError struct {
	status int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("the registry answered the cache's GET with %d %s", e.status, http.StatusText(e.status))
}

// fetch is the fill's GET of r's path through the route's upstream client
// (retries, redirects followed to blob storage), with the headers of the
// node that started it, which the registry has just allowed (HEAD).
func (c *Cache) fetch(r *http.Request, req request) FetchFunc {
	return func(ctx context.Context) (Fetched, error) {
		resp, err := req.roundTrip(ctx, r, http.MethodGet)
		if err != nil {
			return Fetched{}, err
		}
		if resp.StatusCode != http.StatusOK {
			_ = resp.Body.Close()
			return Fetched{}, &statusError{status: resp.StatusCode}
		}
		return Fetched{Body: resp.Body, Header: storedHeader(resp.Header), Size: resp.ContentLength}, nil
	}
}

// storedHeader is what the store keeps beside the content and replays.
func storedHeader(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range []string{"Content-Type", "Docker-Content-Digest"} {
		if v := h.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	return out
}

// relayHead answers a HEAD with the registry's answer to it.
func relayHead(w http.ResponseWriter, head *http.Response) {
	copyHeader(w.Header(), head.Header)
	w.WriteHeader(head.StatusCode)
}

// copyHeader copies the end-to-end headers of src into dst.
func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if oci.IsHopByHop(k) {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}
