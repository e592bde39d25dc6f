package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRegistryCountsBlobBytes: the registry counts the body bytes of the
// blob responses it sends (what the cache scenarios report as crossing
// the uplink), and nothing for a HEAD or a manifest; the cache layer it
// serves is the one whose digest the load generator computes, and that
// digest is the sha256 of its bytes (the caches verify it while filling).
func TestRegistryCountsBlobBytes(t *testing.T) {
	hb := startHTTPBench(t)
	layer := newCacheLayer(testLayerSize)
	digest := layer.digest()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: hb.upstreamTLS()}}
	defer c.CloseIdleConnections()
	tests := []struct {
		name, method, path, rng string
		status                  int
		wantBytes               int64 // counted by this request
	}{
		{name: "layer", method: "GET", path: blobPath(digest), status: 200, wantBytes: testLayerSize},
		{name: "layer HEAD", method: "HEAD", path: blobPath(digest), status: 200},
		{name: "layer range", method: "GET", path: blobPath(digest), rng: "bytes=100-199", status: 206, wantBytes: 100},
		{name: "manifest", method: "GET", path: manifestPath, status: 200},
		{name: "unknown blob", method: "GET", path: blobPath("sha256:00"), status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hb.blobBytes()
			req, _ := http.NewRequest(tt.method, "https://"+hb.registry+tt.path, nil)
			if tt.rng != "" {
				req.Header.Set("Range", tt.rng)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tt.status {
				t.Fatalf("%s %s: %s, %v; want %d", tt.method, tt.path, resp.Status, err, tt.status)
			}
			if tt.name == "layer" && digestOf(body) != digest {
				t.Errorf("the layer's bytes have digest %s, want %s", digestOf(body), digest)
			}
			if got := hb.blobBytes() - before; got != tt.wantBytes {
				t.Errorf("counted %d blob bytes, want %d", got, tt.wantBytes)
			}
		})
	}
}

func (hb *httpBench) blobBytes() int64 {
	hb.stats.mu.Lock()
	defer hb.stats.mu.Unlock()
	return hb.stats.BlobBytes
}

// cacheRunner is a runner of the cache scenarios against the test
// registry, whose counters it reads over HTTP as in a bench run.
func cacheRunner(t *testing.T, hb *httpBench, targets ...target) *runner {
	stats := httptest.NewServer(hb.stats)
	t.Cleanup(stats.Close)
	return &runner{
		pki: hb.p, log: io.Discard, out: filepath.Join(t.TempDir(), "results.jsonl"), targets: targets,
		upstreamStats: strings.TrimPrefix(stats.URL, "http://"),
		scenarios:     []string{"cache-*"}, rounds: 1, firstRound: 1,
		layer:     descriptor{Digest: newCacheLayer(testLayerSize).digest(), Size: testLayerSize},
		pullNodes: 4, pullTimeout: 10 * time.Second, cacheStreams: []int{1, 2}, tputTime: 100 * time.Millisecond,
	}
}

// TestCacheScenarios: through a proxy without a cache, cache-pull's
// nodes each make the registry send the whole layer (4 nodes, 4 layers),
// and cache-hit measures a throughput; the cache targets are left out of
// the http scenarios (they have their own).
func TestCacheScenarios(t *testing.T) {
	hb := startHTTPBench(t)
	r := cacheRunner(t, hb, target{Name: "proxy", HTTP: hb.startHTTPProxy(t)})
	if err := r.run(); err != nil {
		t.Fatal(err)
	}
	results, err := readResults([]string{r.out})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, res := range results {
		got[res.Scenario] = res
	}
	pull := got["cache-pull"]
	if pull.Notes["error"] != "" || pull.Values["registry_layers"] != 4 || pull.Values["last_s"] <= 0 {
		t.Errorf("cache-pull: %v, error %q; want 4 layers from the registry and a time", pull.Values, pull.Notes["error"])
	}
	for _, sc := range []string{"cache-hit-1", "cache-hit-2"} {
		if res := got[sc]; res.Notes["error"] != "" || res.Values["gbit_s"] <= 0 || res.Values["errors"] != 0 {
			t.Errorf("%s: %v, error %q", sc, res.Values, res.Notes["error"])
		}
	}
	if httpAddr(target{HTTP: "a:1", Purge: "b:2"}) != "" || cacheAddr(target{HTTP: "a:1", Direct: true}) != "" {
		t.Error("a cache target takes part in the http scenarios, or the direct baseline in the cache scenarios")
	}
}

// TestEmptyCache: snigate's cache is purged through its runtime API
// (POST /api/cache/purge, {} as JSON), an answer other than 200 is an
// error that says so, and a cache directory is emptied but kept.
func TestEmptyCache(t *testing.T) {
	var gotCT, gotBody string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotCT, gotBody = r.Header.Get("Content-Type"), string(b)
		if r.Method != http.MethodPost || r.URL.Path != "/api/cache/purge" {
			http.Error(w, "no such endpoint", http.StatusNotFound)
		}
	}))
	defer api.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the runtime API is not available", http.StatusServiceUnavailable)
	}))
	defer broken.Close()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b", "blob"), []byte("x"), 0o644)
	tests := []struct {
		name    string
		target  target
		wantErr string
	}{
		{name: "purge", target: target{Purge: strings.TrimPrefix(api.URL, "http://")}},
		{name: "purge refused", target: target{Purge: strings.TrimPrefix(broken.URL, "http://")}, wantErr: "503"},
		{name: "directory", target: target{CacheDir: dir}},
		{name: "missing directory", target: target{CacheDir: filepath.Join(dir, "none")}, wantErr: "no such file"},
		{name: "no cache", target: target{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := emptyCache(tt.target)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("emptyCache = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	if gotCT != "application/json" || gotBody != "{}" {
		t.Errorf("purge sent %q with Content-Type %q, want {} as application/json", gotBody, gotCT)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("cache directory after emptying: %v entries, %v; want it empty and present", len(entries), err)
	}
}

// TestCacheVerdicts: issue 16's targets - the registry sends the layer
// at most once, and the cache's CPU per GB and throughput are judged
// against the bridge without a cache (snigate), not the best of HAProxy
// and nginx; snigate is not judged against itself.
func TestCacheVerdicts(t *testing.T) {
	s := summarize([]Result{
		{Scenario: "cache-pull", Target: "snigate", Round: 1, Values: map[string]float64{"registry_layers": 8, "cpu_s_gb": 2}},
		{Scenario: "cache-pull", Target: "snigate-cache", Round: 1, Values: map[string]float64{"registry_layers": 1, "cpu_s_gb": 1.5, "last_s": 3}},
		{Scenario: "cache-pull", Target: "nginx-cache", Round: 1, Values: map[string]float64{"registry_layers": 1, "cpu_s_gb": 0.5}},
		{Scenario: "cache-hit-8", Target: "snigate", Round: 1, Values: map[string]float64{"gbit_s": 4, "cpu_s_gb": 1}},
		{Scenario: "cache-hit-8", Target: "snigate-cache", Round: 1, Values: map[string]float64{"gbit_s": 3, "cpu_s_gb": 1}},
		{Scenario: "cache-hit-8", Target: "nginx-cache", Round: 1, Values: map[string]float64{"gbit_s": 9, "cpu_s_gb": 0.2}},
	})
	c := comparison{subjects: []string{"snigate", "snigate-cache"}, base: "haproxy", refs: []string{"haproxy", "nginx"}, cacheBase: "snigate"}
	rows := map[string]row{}
	for _, rw := range s.rows() {
		rows[rw.scenario+"/"+rw.key] = rw
	}
	tests := []struct {
		name, key, subject, want string
	}{
		{name: "registry once", key: "cache-pull/registry_layers", subject: "snigate-cache", want: "yes (≤ 1)"},
		{name: "registry per node", key: "cache-pull/registry_layers", subject: "snigate", want: "**no** (≤ 1)"},
		{name: "pull CPU below the bridge's", key: "cache-pull/cpu_s_gb", subject: "snigate-cache", want: "yes"},
		{name: "not against itself", key: "cache-pull/cpu_s_gb", subject: "snigate", want: "—"},
		{name: "hit CPU equal", key: "cache-hit-8/cpu_s_gb", subject: "snigate-cache", want: "yes"},
		{name: "hit slower than the bridge", key: "cache-hit-8/gbit_s", subject: "snigate-cache", want: "**no**"},
		{name: "time informative", key: "cache-pull/last_s", subject: "snigate-cache", want: "—"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rw, ok := rows[tt.key]
			if !ok {
				t.Fatalf("no row %s", tt.key)
			}
			if got := c.verdict(s, rw, tt.subject); got != tt.want {
				t.Errorf("verdict = %q, want %q", got, tt.want)
			}
		})
	}
	var b strings.Builder
	writeTable(&b, s, c)
	if !strings.Contains(b.String(), "0.75× (snigate)") {
		t.Errorf("table has no ratio of snigate-cache's pull CPU to snigate's (0.75×):\n%s", b.String())
	}
}
