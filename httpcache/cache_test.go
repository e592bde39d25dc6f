package httpcache

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func blobPath(d string) string { return "/v2/team/app/blobs/" + d }

// TestConcurrentPullsFetchOnce: eight nodes (HTTP/2 and HTTP/1.1) ask for
// one blob at once while the registry holds its answer half-way: every
// node gets the exact bytes and the registry sees one GET of the blob
// (each node's HEAD, though: the registry decides for every node).
func TestConcurrentPullsFetchOnce(t *testing.T) {
	const nodes = 8
	w := newWorld(t, worldOpts{})
	content := randomBytes(t, 3<<20)
	d := w.up.push(t, content)
	gate, seen := make(chan struct{}), make(chan string, 64)
	w.up.set(func(f *fakeRegistry) { f.gate, f.seen = gate, seen })
	var wg sync.WaitGroup
	errs := make(chan error, nodes)
	for i := range nodes {
		c := w.node(t, []string{"h2", "http/1.1"}[i%2])
		wg.Go(func() {
			status, body, h, err := get(c, blobPath(d))
			switch {
			case err != nil:
				errs <- err
			case status != http.StatusOK || !bytes.Equal(body, content):
				errs <- fmt.Errorf("status %d, %d bytes (want %d, the pushed bytes)", status, len(body), len(content))
			case h.Get("Docker-Content-Digest") != d:
				errs <- fmt.Errorf("Docker-Content-Digest %q, want %s", h.Get("Docker-Content-Digest"), d)
			}
		})
	}
	awaitRequests(t, seen, "HEAD "+blobPath(d), nodes)
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := w.up.count(http.MethodGet, blobPath(d)); n != 1 {
		t.Errorf("registry saw %d GETs of the blob, want 1", n)
	}
	if s := w.store.Stats(); s.Hits+s.Misses != nodes || s.Entries != 1 {
		t.Errorf("stats %+v, want %d hits+misses and 1 entry", s, nodes)
	}
}

// awaitRequests reads seen until n requests named key arrived.
func awaitRequests(t *testing.T, seen <-chan string, key string, n int) {
	t.Helper()
	for got := 0; got < n; {
		select {
		case k := <-seen:
			if k == key {
				got++
			}
		case <-t.Context().Done():
			t.Fatalf("%d of %d %q seen", got, n, key)
		}
	}
}

// fill pulls d once through the gateway, so that it is cached.
func (w *world) fill(t *testing.T, d string, want []byte) {
	t.Helper()
	status, body, _, err := get(w.node(t, "h2"), blobPath(d))
	if err != nil || status != http.StatusOK || !bytes.Equal(body, want) {
		t.Fatalf("filling GET: status %d, %d bytes, err %v", status, len(body), err)
	}
	if s := w.store.Stats(); s.Entries != 1 {
		t.Fatalf("after the fill the store holds %d entries, want 1", s.Entries)
	}
}

// TestHeadDeniedCachedBlobNotServed: a blob in the cache is not served to
// a node the registry refuses (its HEAD answered 401, 403, 404): the node
// gets the registry's refusal. The bug this guards against: serving
// every cached digest to anyone who asks.
func TestHeadDeniedCachedBlobNotServed(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			w := newWorld(t, worldOpts{})
			content := randomBytes(t, 64<<10)
			d := w.up.push(t, content)
			w.fill(t, d, content)
			w.up.set(func(f *fakeRegistry) { f.deny[blobPath(d)] = status })
			got, body, _, err := get(w.node(t, "http/1.1"), blobPath(d), "Authorization", "Bearer other-node")
			if err != nil {
				t.Fatal(err)
			}
			if got != status || bytes.Contains(body, content[:1024]) {
				t.Errorf("status %d, %d bytes; want %d and the registry's refusal, not the cached blob", got, len(body), status)
			}
			if n := w.up.count(http.MethodHead, blobPath(d)); n != 2 {
				t.Errorf("registry saw %d HEADs, want 2 (one per request)", n)
			}
		})
	}
}

// TestHeadCarriesNodeAuthorization: the registry's HEAD carries the
// node's own Authorization and the forwarding headers.
func TestHeadCarriesNodeAuthorization(t *testing.T) {
	w := newWorld(t, worldOpts{})
	content := randomBytes(t, 1<<10)
	d := w.up.push(t, content)
	var heads []*http.Request
	var mu sync.Mutex
	inner := w.up.reg
	w.up.set(func(f *fakeRegistry) {
		f.reg = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				mu.Lock()
				heads = append(heads, r.Clone(r.Context()))
				mu.Unlock()
			}
			inner.ServeHTTP(rw, r)
		})
	})
	for range 2 {
		if status, _, _, err := get(w.node(t, "h2"), blobPath(d), "Authorization", "Bearer node-1"); err != nil || status != 200 {
			t.Fatalf("GET: %d %v", status, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heads) != 2 {
		t.Fatalf("registry saw %d HEADs, want 2 (a miss and a hit)", len(heads))
	}
	for _, r := range heads {
		if r.Header.Get("Authorization") != "Bearer node-1" || r.Header.Get("X-Forwarded-For") != "127.0.0.1" || r.Host != registryName {
			t.Errorf("HEAD Authorization %q X-Forwarded-For %q Host %q", r.Header.Get("Authorization"), r.Header.Get("X-Forwarded-For"), r.Host)
		}
	}
}

// TestRangeFromCache: ranges of a cached blob are answered from the
// cache byte-exact, without a second GET upstream.
func TestRangeFromCache(t *testing.T) {
	w := newWorld(t, worldOpts{})
	content := randomBytes(t, 1<<20)
	d := w.up.push(t, content)
	w.fill(t, d, content)
	tests := []struct {
		name, rng string
		from, to  int
	}{
		{name: "middle", rng: "bytes=1000-1999", from: 1000, to: 2000},
		{name: "suffix", rng: "bytes=-10", from: len(content) - 10, to: len(content)},
		{name: "open end", rng: fmt.Sprintf("bytes=%d-", len(content)-4096), from: len(content) - 4096, to: len(content)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, h, err := get(w.node(t, "h2"), blobPath(d), "Range", tt.rng)
			if err != nil {
				t.Fatal(err)
			}
			if status != http.StatusPartialContent || !bytes.Equal(body, content[tt.from:tt.to]) {
				t.Errorf("status %d, %d bytes; want 206 and bytes %d-%d", status, len(body), tt.from, tt.to-1)
			}
			if h.Get("Docker-Content-Digest") != d {
				t.Errorf("Docker-Content-Digest %q", h.Get("Docker-Content-Digest"))
			}
		})
	}
	if n := w.up.count(http.MethodGet, blobPath(d)); n != 1 {
		t.Errorf("registry saw %d GETs, want 1 (the fill)", n)
	}
}

// TestCorruptCachedFileRefetched: one byte changed in a cached file: the
// next pull gets the right bytes, fetched again from the registry.
func TestCorruptCachedFileRefetched(t *testing.T) {
	w := newWorld(t, worldOpts{})
	content := randomBytes(t, 256<<10)
	d := w.up.push(t, content)
	w.fill(t, d, content)
	hx := strings.TrimPrefix(d, "sha256:")
	path := filepath.Join(w.dir, "sha256", hx[:2], hx)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{content[100] ^ 0xff}, 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	status, body, _, err := get(w.node(t, "h2"), blobPath(d))
	if err != nil || status != http.StatusOK || !bytes.Equal(body, content) {
		t.Fatalf("after the corruption: status %d, %d bytes, err %v; want the right bytes", status, len(body), err)
	}
	if n := w.up.count(http.MethodGet, blobPath(d)); n != 2 {
		t.Errorf("registry saw %d GETs, want 2 (the fill, the refetch)", n)
	}
}

// TestUpstreamFailingMidFillFailsEveryNode: the registry breaks the blob
// half-way: every node's download fails (never a short 200) and nothing
// is stored.
func TestUpstreamFailingMidFillFailsEveryNode(t *testing.T) {
	const nodes = 4
	w := newWorld(t, worldOpts{})
	content := randomBytes(t, 1<<20)
	d := w.up.push(t, content)
	w.up.set(func(f *fakeRegistry) { f.breakMid = true })
	var wg sync.WaitGroup
	for i := range nodes {
		c := w.node(t, []string{"h2", "http/1.1"}[i%2])
		wg.Go(func() {
			status, body, _, err := get(c, blobPath(d))
			if err == nil && status == http.StatusOK {
				t.Errorf("node %d: a complete 200 of %d bytes (want %d or a failure)", i, len(body), len(content))
			}
		})
	}
	wg.Wait()
	if s := w.store.Stats(); s.Entries != 0 {
		t.Errorf("the store holds %d entries after a broken fill, want 0", s.Entries)
	}
}

// TestManifestByTagFillsDigest: a manifest fetched by tag fills its
// by-digest entry; a pull by digest is then a hit (no GET upstream).
func TestManifestByTagFillsDigest(t *testing.T) {
	w := newWorld(t, worldOpts{})
	cfg := w.up.push(t, []byte(`{}`))
	m := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":2},"layers":[]}`, cfg))
	d := w.up.pushManifest(t, "v1", m)
	c := w.node(t, "h2")
	status, body, _, err := get(c, "/v2/team/app/manifests/v1")
	if err != nil || status != 200 || !bytes.Equal(body, m) {
		t.Fatalf("by tag: %d %v", status, err)
	}
	status, body, h, err := get(c, "/v2/team/app/manifests/"+d)
	if err != nil || status != 200 || !bytes.Equal(body, m) {
		t.Fatalf("by digest: %d %v", status, err)
	}
	if ct := h.Get("Content-Type"); ct != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("Content-Type %q", ct)
	}
	if n := w.up.count(http.MethodGet, "/v2/team/app/manifests/"+d); n != 0 {
		t.Errorf("registry saw %d GETs of the manifest by digest, want 0 (filled by the tag's answer)", n)
	}
	if s := w.store.Stats(); s.Hits != 1 {
		t.Errorf("stats %+v, want 1 hit", s)
	}
}

// TestStoreUnavailableBypasses: a store whose directory cannot be used
// (here a file) makes every digest request bypass it: served from the
// registry through the proxy, counted as bypass.
func TestStoreUnavailableBypasses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, worldOpts{dir: file})
	content := randomBytes(t, 64<<10)
	d := w.up.push(t, content)
	for range 2 {
		status, body, _, err := get(w.node(t, "h2"), blobPath(d))
		if err != nil || status != http.StatusOK || !bytes.Equal(body, content) {
			t.Fatalf("GET with the store unavailable: %d, %d bytes, %v", status, len(body), err)
		}
	}
	if s := w.store.Stats(); s.Bypasses != 2 || s.Unavailable == "" {
		t.Errorf("stats %+v, want 2 bypasses and the store unavailable", s)
	}
	if n := w.up.count(http.MethodGet, blobPath(d)); n != 2 {
		t.Errorf("registry saw %d GETs, want 2 (each request proxied)", n)
	}
}
