package images

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/internal/cachestore"
	"github.com/snigate/snigate/oci"
	"github.com/snigate/snigate/regcache"
)

// world is a route: go-containerregistry's registry, the cache link
// over a regcache.Cache, and a proxy to the registry as the rest of the
// chain; chain is the route's Fetcher.
type world struct {
	reg   *httptest.Server
	store *regcache.Cache
	rt    Route
	mu    sync.Mutex
	gets  map[string]int // "GET path" seen by the registry
	down  bool           // the registry is unreachable
	tags  time.Duration  // the cache link's Tags
}

func newWorld(t *testing.T, maxSize int64) *world {
	t.Helper()
	return newWorldTags(t, maxSize, time.Hour)
}

// newWorldTags is newWorld with the cache link's Tags.
func newWorldTags(t *testing.T, maxSize int64, tags time.Duration) *world {
	t.Helper()
	w := &world{gets: map[string]int{}, tags: tags}
	regh := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	w.reg = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.gets[r.Method+" "+r.URL.Path]++
		w.mu.Unlock()
		regh.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.reg.Close)
	w.store = openStore(t, t.TempDir(), maxSize)
	w.rt = w.route(w.store)
	return w
}

func openStore(t *testing.T, dir string, maxSize int64) *regcache.Cache {
	t.Helper()
	c, err := regcache.Open(regcache.Config{Route: "registry", Dir: dir, MaxSize: maxSize, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// route is a Route over store with this world's registry.
func (w *world) route(store *regcache.Cache) Route {
	u, _ := url.Parse(w.reg.URL)
	upstream := roundTrip(func(r *http.Request) (*http.Response, error) {
		w.mu.Lock()
		down := w.down
		w.mu.Unlock()
		if down {
			return nil, oci.ErrNoUpstream
		}
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host = "http", u.Host
		return http.DefaultTransport.RoundTrip(out)
	})
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: upstream,
		ErrorHandler: func(rw http.ResponseWriter, r *http.Request, err error) {
			oci.AnnotationFrom(r.Context()).Fail(err, false)
			oci.WriteError(rw, 503, oci.CodeUnavailable, err.Error())
		}}
	c, err := httpcache.New(httpcache.Config{Route: "registry", Store: testStore{cachestore.Local{C: store}}, Offline: true, Tags: w.tags, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	return Route{Name: "registry", Host: "registry.test", Fetch: chain{c.Wrap(proxy, upstream)}, Store: testStore{cachestore.Local{C: store}}}
}

func (w *world) stop() {
	w.mu.Lock()
	w.down = true
	w.mu.Unlock()
}

func (w *world) count(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gets[key]
}

// push writes an index of n random images (3 layers each) as repo:tag.
func (w *world) pushIndex(t *testing.T, repo, tag string, n int) v1.ImageIndex {
	t.Helper()
	idx, err := random.Index(1024, 3, int64(n))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(strings.TrimPrefix(w.reg.URL, "http://")+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// chain is a Fetcher over a handler, as the bridge's ServeOwn is.
type chain struct{ h http.Handler }

func (c chain) ServeOwn(w http.ResponseWriter, r *http.Request) (err error) {
	ann := oci.NewAnnotation(oci.ParseURL(r.URL))
	r = r.WithContext(oci.WithAnnotation(r.Context(), ann))
	defer func() {
		if p := recover(); p != nil {
			err = errors.Join(ann.Facts().Err, errors.New("aborted"))
		}
	}()
	c.h.ServeHTTP(w, r)
	return ann.Facts().Err
}

// testStore is a regcache.Cache as both the cache link's Store (the
// gateway's adapter, cachestore.Local) and the images' Store.
type testStore struct{ cachestore.Local }

func (s testStore) Holds(d string) bool { return s.C.Holds(d) }

func (s testStore) Open(ctx context.Context, d string) (Blob, bool) {
	e, ok := s.C.Get(ctx, d)
	if !ok {
		return nil, false
	}
	return e, true
}

func (s testStore) Put(ctx context.Context, d string, h http.Header, size int64, body io.Reader) error {
	return s.C.Put(ctx, d, h, size, body)
}
