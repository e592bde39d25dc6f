package s3tier

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/oci"
)

// TestCacheLinkOverTwoTiers: the cache link (httpcache, unchanged) over
// Tiered on two gateways sharing a bucket: the registry still decides
// (a HEAD before every serve, and a 401 keeps the shared content from a
// node), gateway a's node fills it with one registry GET, and gateway b's
// node is served from the bucket without another; with the registry
// down and offline: true, a third gateway serves it from the bucket.
func TestCacheLinkOverTwoTiers(t *testing.T) {
	w := startWeed(t)
	reg := newLinkRegistry(t, newRegistry(3<<20))
	pull := func(g *gateway, auth string) (int, []byte, string) {
		return linkPull(t, g, reg, auth)
	}
	a, b := newGateway(t, w, "a"), newGateway(t, w, "b")

	if code, body, word := pull(a, "Bearer ok"); code != 200 || !bytes.Equal(body, reg.content.body) || word != "miss" {
		t.Fatalf("gateway a: %d, %d bytes, %q; want 200, the blob, miss", code, len(body), word)
	}
	a.tier.wg.Wait()
	if code, _, _ := pull(b, "Bearer stolen"); code != http.StatusUnauthorized {
		t.Fatalf("gateway b, refused by the registry: %d, want 401", code)
	}
	if code, body, word := pull(b, "Bearer ok"); code != 200 || !bytes.Equal(body, reg.content.body) || word != "hit" {
		t.Fatalf("gateway b: %d, %d bytes, %q; want 200, the blob, hit", code, len(body), word)
	}
	if g, h := reg.gets.Load(), reg.heads.Load(); g != 1 || h != 2 {
		t.Errorf("registry: %d GETs and %d HEADs, want 1 GET (the fleet's fill) and 2 HEADs (one per serve)", g, h)
	}
	if got := b.requests(resultHit); got != 1 {
		t.Errorf("b's shared hits = %v, want 1", got)
	}

	// offline: true applies to both tiers: with no upstream answering, a
	// third gateway's empty local tier is filled from the bucket and serves
	reg.down, reg.offline = true, true
	c := newGateway(t, w, "c")
	if code, body, word := pull(c, "Bearer ok"); code != 200 || !bytes.Equal(body, reg.content.body) || word != "offline" {
		t.Fatalf("gateway c, registry down, offline: %d, %d bytes, %q; want 200, the blob, offline", code, len(body), word)
	}
}

// linkRegistry is the registry behind the cache link of
// TestCacheLinkOverTwoTiers: it answers "Bearer ok" only, counts HEADs
// and GETs, and is unreachable (oci.ErrNoUpstream) while down; offline
// is the link's cache.offline.
type linkRegistry struct {
	content       *registry
	srv           *httptest.Server
	heads, gets   atomic.Int32
	down, offline bool
}

func newLinkRegistry(t *testing.T, content *registry) *linkRegistry {
	lr := &linkRegistry{content: content}
	lr.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ok" {
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		rw.Header().Set("Content-Type", "application/vnd.oci.image.layer.v1.tar")
		rw.Header().Set("Docker-Content-Digest", content.digest)
		if r.Method == http.MethodHead {
			lr.heads.Add(1)
			rw.Header().Set("Content-Length", fmt.Sprint(len(content.body)))
			return
		}
		lr.gets.Add(1)
		_, _ = rw.Write(content.body)
	}))
	t.Cleanup(lr.srv.Close)
	return lr
}

// RoundTrip is the link's upstream: the registry, or no upstream while down.
func (lr *linkRegistry) RoundTrip(r *http.Request) (*http.Response, error) {
	if lr.down {
		return nil, fmt.Errorf("route r: %w", oci.ErrNoUpstream)
	}
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host = "http", lr.srv.Listener.Addr().String()
	return http.DefaultTransport.RoundTrip(out)
}

// linkPull GETs reg's blob through a cache link over g's store with the
// Authorization auth: the status, the body and the audit's cache word.
func linkPull(t *testing.T, g *gateway, reg *linkRegistry, auth string) (int, []byte, string) {
	t.Helper()
	c, err := httpcache.New(httpcache.Config{Route: "r", Store: g.store, Offline: reg.offline})
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusUnauthorized) // the registry's own answer through the proxy
	})
	r := httptest.NewRequest(http.MethodGet, "https://registry.test/v2/team/app/blobs/"+reg.content.digest, nil)
	r.Header.Set("Authorization", auth)
	ann := oci.NewAnnotation(oci.ParseURL(r.URL))
	r = r.WithContext(oci.WithAnnotation(r.Context(), ann))
	rec := httptest.NewRecorder()
	c.Wrap(next, reg).ServeHTTP(rec, r)
	return rec.Code, rec.Body.Bytes(), ann.Facts().Cache
}
