package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The cache scenarios (issue 16): N nodes pulling one layer through a
// proxy with a cache, the same proxy without it, and nginx with
// proxy_cache; then the throughput of the layer once it is cached.

// cacheLayerSeed is the pattern seed of the cache scenarios' layer (the
// large blob's is 1): the registry serves it and the load generator
// computes its digest from the same size and seed, so neither needs the
// other's word for it.
const cacheLayerSeed = 2

// newCacheLayer is the cache scenarios' layer of size bytes.
func newCacheLayer(size int64) patternBlob { return newPatternBlob(size, cacheLayerSeed) }

// cacheAddr is a proxy's http address, with a cache or without (the
// direct baseline is no proxy: the registry sends every byte itself).
func cacheAddr(t target) string {
	if t.Direct {
		return ""
	}
	return t.HTTP
}

// wantsCache reports whether a cache scenario was asked for.
func (r *runner) wantsCache() bool {
	return r.chosen("cache-pull") || slices.ContainsFunc(r.cacheStreams, func(n int) bool {
		return r.chosen(fmt.Sprintf("cache-hit-%d", n))
	})
}

// cachePull is scenario 8a: with the target's cache emptied, pullNodes
// nodes each GET the layer once over a fresh HTTP/1.1 connection, all at
// once. It records the layer's bytes the registry sent (in layers), the
// time until the last node was done and the proxy's CPU per GB served.
func (r *runner) cachePull(t target, round int) (Result, error) {
	res := r.newResult("cache-pull", t, round)
	if r.layer.Size == 0 {
		return res, fmt.Errorf("no layer: run loadgen with -layer-mib, as loadgen upstream")
	}
	if err := emptyCache(t); err != nil {
		return res, err
	}
	up0, err := fetchUpstreamStats(r.upstreamStats)
	if err != nil {
		return res, fmt.Errorf("registry byte count: %w", err)
	}
	var ts transports
	defer ts.closeAll()
	clients := r.httpClients(&ts, t, r.pullNodes, false)
	cpu := startCPU(t.PID, r.upstreamPID)
	pl := pullAll(t, clients, blobPath(r.layer.Digest), r.layer.Size, r.pullTimeout)
	res.CPU = cpu.stop()
	up1, err := fetchUpstreamStats(r.upstreamStats)
	if err != nil {
		return res, fmt.Errorf("registry byte count: %w", err)
	}
	res.Values["registry_layers"] = float64(up1.BlobBytes-up0.BlobBytes) / float64(r.layer.Size)
	res.Values["last_s"] = pl.last.Seconds()
	res.Values["errors"] = float64(pl.errs)
	cpuPerGB(&res, pl.bytes, pl.last)
	if pl.firstErr != nil {
		res.Notes["first_error"] = pl.firstErr.Error()
		return res, fmt.Errorf("%d of %d nodes failed: %w", pl.errs, r.pullNodes, pl.firstErr)
	}
	return res, nil
}

// cacheHit is scenario 8b: after one GET of the layer (which fills a
// cache still empty), streams keep-alive connections download it again
// and again for tputTime.
func (r *runner) cacheHit(streams int) func(*runner, target, int) (Result, error) {
	return func(r *runner, t target, round int) (Result, error) {
		res := r.newResult(fmt.Sprintf("cache-hit-%d", streams), t, round)
		if r.layer.Size == 0 {
			return res, fmt.Errorf("no layer: run loadgen with -layer-mib, as loadgen upstream")
		}
		path := blobPath(r.layer.Digest)
		var ts transports
		defer ts.closeAll()
		clients := r.httpClients(&ts, t, streams, true)
		if pl := pullAll(t, clients[:1], path, r.layer.Size, r.pullTimeout); pl.firstErr != nil {
			return res, fmt.Errorf("first GET of the layer: %w", pl.firstErr)
		}
		for _, c := range clients[1:] {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			_, _, err := fetch(ctx, c, "/v2/", nil, make([]byte, 1024))
			cancel()
			if err != nil {
				return res, fmt.Errorf("warm-up GET /v2/: %w", err)
			}
		}
		up0, uerr0 := fetchUpstreamStats(r.upstreamStats)
		cpu := startCPU(t.PID, r.upstreamPID)
		dl := downloadAll(clients, path, r.tputTime, nil, nil)
		res.CPU = cpu.stop()
		up1, uerr1 := fetchUpstreamStats(r.upstreamStats)
		if uerr0 == nil && uerr1 == nil {
			res.Values["registry_layers"] = float64(up1.BlobBytes-up0.BlobBytes) / float64(r.layer.Size)
		}
		cpuPerGB(&res, dl.bytes, dl.elapsed)
		return res, dl.values(&res, 0, streams)
	}
}

// httpClients returns n HTTP/1.1 clients of t (kept alive or one
// connection per request) whose response headers may take pullTimeout:
// nginx's proxy_cache_lock holds the nodes waiting for a fill until it
// is complete.
func (r *runner) httpClients(ts *transports, t target, n int, keepAlive bool) []*http.Client {
	cfg := httpClientTLS(t, r.pki, r.curves)
	clients := make([]*http.Client, n)
	for i := range clients {
		clients[i] = ts.new(t.HTTP, cfg, keepAlive)
		clients[i].Transport.(*http.Transport).ResponseHeaderTimeout = r.pullTimeout
	}
	return clients
}

// pulls is the outcome of pullAll.
type pulls struct {
	bytes, errs int64
	firstErr    error
	last        time.Duration // from the start until the last client was done
}

// pullAll has every client GET path once, all at once, each within
// timeout, and checks that each got size bytes.
func pullAll(t target, clients []*http.Client, path string, size int64, timeout time.Duration) pulls {
	var (
		pl pulls
		mu sync.Mutex
		wg sync.WaitGroup
	)
	start := time.Now()
	for _, c := range clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			n, _, err := fetch(ctx, c, path, nil, make([]byte, readChunk))
			if err == nil && n != size {
				err = fmt.Errorf("GET %s from %s: %d bytes, want %d", path, t.Name, n, size)
			}
			done := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			pl.bytes += n
			pl.last = max(pl.last, done)
			if err != nil {
				pl.errs++
				pl.firstErr = cmpOr(pl.firstErr, err)
			}
		})
	}
	wg.Wait()
	return pl
}

// cpuPerGB records the proxy's CPU seconds per GB (1e9 bytes) it served
// in elapsed.
func cpuPerGB(res *Result, bytes int64, elapsed time.Duration) {
	if bytes > 0 && res.CPU.Proxy > 0 {
		res.Values["cpu_s_gb"] = res.CPU.Proxy / 100 * elapsed.Seconds() / (float64(bytes) / 1e9)
	}
}

// emptyCache removes everything t's cache holds: through snigate's
// runtime API (POST /api/cache/purge {}), or by emptying its directory.
func emptyCache(t target) error {
	if t.Purge != "" {
		return purgeSnigate(t.Purge)
	}
	if t.CacheDir != "" {
		return emptyDir(t.CacheDir)
	}
	return nil
}

func purgeSnigate(admin string) error {
	c := http.Client{Timeout: opTimeout}
	resp, err := c.Post("http://"+admin+"/api/cache/purge", "application/json", strings.NewReader("{}"))
	if err != nil {
		return fmt.Errorf("purging the cache: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b := make([]byte, 512)
		n, _ := readAll(resp.Body, b)
		return fmt.Errorf("purging the cache: POST /api/cache/purge on %s: %s: %.512s", admin, resp.Status, b[:min(int(n), len(b))])
	}
	return nil
}

// emptyDir removes what dir holds, keeping dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("emptying the cache: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("emptying the cache: %w", err)
		}
	}
	return nil
}
