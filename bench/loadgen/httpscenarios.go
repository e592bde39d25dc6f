package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// httpAddr is the target's address for the http scenarios; a proxy with
// a cache has its own scenarios (cacheAddr).
func httpAddr(t target) string {
	if t.cached() {
		return ""
	}
	return t.HTTP
}

// httpManifest is scenario 7a: conc workers each open a fresh TLS
// connection per request (no session cache, Connection: close) and fetch
// the manifest by tag, checking its digest.
func (r *runner) httpManifest(t target, round int) (Result, error) {
	res := r.newResult("http-manifest", t, round)
	cfg := httpClientTLS(t, r.pki, r.curves)
	want := r.catalog.manifestDigest
	var ts transports
	defer ts.closeAll()
	newOp := func() func() error {
		c := ts.new(t.HTTP, cfg, false)
		buf := make([]byte, 64<<10)
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			n, h, err := fetch(ctx, c, manifestPath, nil, buf)
			if err != nil {
				return err
			}
			if n > int64(len(buf)) || h.Get("Docker-Content-Digest") != want || digestOf(buf[:n]) != want {
				return fmt.Errorf("GET %s: not the manifest %s", manifestPath, want)
			}
			return nil
		}
	}
	return r.httpLoop(res, t, newOp)
}

// httpBlobs is scenario 7b: conc keep-alive connections each fetch the
// small blobs in turn, checking each one's length.
func (r *runner) httpBlobs(t target, round int) (Result, error) {
	res := r.newResult("http-blobs", t, round)
	cfg := httpClientTLS(t, r.pki, r.curves)
	blobs := r.catalog.small
	var ts transports
	defer ts.closeAll()
	worker := 0
	newOp := func() func() error { // called by one goroutine, once per worker
		c := ts.new(t.HTTP, cfg, true)
		buf := make([]byte, 2*smallBlobSize)
		i := worker
		worker++
		return func() error {
			b := blobs[i%len(blobs)]
			i++
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			n, _, err := fetch(ctx, c, blobPath(b.Digest), nil, buf)
			if err == nil && n != b.Size {
				err = fmt.Errorf("GET blob %s: %d bytes, want %d", b.Digest, n, b.Size)
			}
			return err
		}
	}
	return r.httpLoop(res, t, newOp)
}

// httpLoop runs a closed loop of requests for httpTime and records the
// request rate, latencies, the proxy's CPU per request and the upstream
// connections it opened meanwhile.
func (r *runner) httpLoop(res Result, t target, newOp func() func() error) (Result, error) {
	up0, _ := fetchUpstreamStats(r.upstreamStats)
	prof := r.startProfile(t, res, r.httpTime)
	cpu := startCPU(t.PID, r.upstreamPID)
	lr := closedLoop(r.conc, r.httpTime, newOp)
	res.CPU = cpu.stop()
	up1, uerr := fetchUpstreamStats(r.upstreamStats)
	upstreamDelta(&res, up0, up1, uerr)
	prof.finish(&res, lr.ok)
	if lr.ok > 0 && t.PID > 0 {
		res.Values["cpu_us_req"] = res.CPU.Proxy / 100 * lr.elapsed.Seconds() / float64(lr.ok) * 1e6
	}
	return res, loopValues(&res, lr, "req_s")
}

// rssSampleEvery is how often the proxy's RSS is read during a download.
const rssSampleEvery = 100 * time.Millisecond

// httpBigBlob is scenario 7c: streams keep-alive connections (each warmed
// by GET /v2/) download the large blob again and again for tputTime;
// the proxy's RSS is sampled meanwhile (and, with a pprof endpoint, its
// CPU profiled).
func (r *runner) httpBigBlob(streams int) func(*runner, target, int) (Result, error) {
	return func(r *runner, t target, round int) (Result, error) {
		res := r.newResult(fmt.Sprintf("http-bigblob-%d", streams), t, round)
		cfg := httpClientTLS(t, r.pki, r.curves)
		var ts transports
		defer ts.closeAll()
		clients := make([]*http.Client, streams)
		for i := range clients {
			clients[i] = ts.new(t.HTTP, cfg, true)
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			_, _, err := fetch(ctx, clients[i], "/v2/", nil, make([]byte, 1024))
			cancel()
			if err != nil {
				return res, fmt.Errorf("warm-up GET /v2/: %w", err)
			}
		}
		up0, _ := fetchUpstreamStats(r.upstreamStats)
		proxy := processTree(t.PID)
		before := rssKiB(proxy)
		var prof *profRun
		sampled := r.pprof(t) // live heap, or CPU profile: not both (its 1 MiB buffer)
		if !r.liveMem {
			prof, sampled = r.startProfile(t, res, r.tputTime), nil
		}
		live := newLiveSample(sampled, res)
		cpu := startCPU(t.PID, r.upstreamPID)
		dl := downloadAll(clients, blobPath(r.catalog.big.Digest), r.tputTime, proxy, live.during)
		res.CPU = cpu.stop()
		prof.finish(&res, int(dl.completed)+streams) // the downloads cut off at the end count too
		up1, uerr := fetchUpstreamStats(r.upstreamStats)
		upstreamDelta(&res, up0, up1, uerr)
		live.values(&res, streams)
		return res, dl.values(&res, before, streams)
	}
}

// downloads is the outcome of downloadAll.
type downloads struct {
	bytes, completed, errs int64
	firstErr               error
	elapsed                time.Duration
	peakRSSKiB             int64 // of the proxy, during the downloads; 0 without one
}

// downloadAll has every client GET path back to back for d (a download
// still running at the end is cut off; its bytes count) while it samples
// the RSS of the process tree proxy (nil: none) every rssSampleEvery.
func downloadAll(clients []*http.Client, path string, d time.Duration, proxy []int, midway func()) downloads {
	start := time.Now()
	deadline := start.Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var (
		dl    downloads
		total atomic.Int64
		mu    sync.Mutex
		wg    sync.WaitGroup
	)
	for _, c := range clients {
		wg.Go(func() {
			buf := make([]byte, readChunk)
			for time.Now().Before(deadline) {
				n, _, err := fetch(ctx, c, path, nil, buf)
				total.Add(n)
				failed := err != nil && ctx.Err() == nil // not the cut-off at the end
				mu.Lock()
				if err == nil {
					dl.completed++
				} else if failed {
					dl.errs++
					dl.firstErr = cmpOr(dl.firstErr, err)
				}
				mu.Unlock()
				if failed {
					time.Sleep(errorPause)
				}
			}
		})
	}
	half := start.Add(d / 2)
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		time.Sleep(min(rssSampleEvery, deadline.Sub(now))) // pacing the sampler
		if len(proxy) > 0 {
			dl.peakRSSKiB = max(dl.peakRSSKiB, rssKiB(proxy))
		}
		if midway != nil && !half.IsZero() && time.Now().After(half) {
			midway()
			half = time.Time{}
		}
	}
	wg.Wait()
	dl.elapsed = time.Since(start)
	dl.bytes = total.Load()
	return dl
}

// values records throughput and memory per request in flight: the peak
// RSS during the downloads less the RSS before them (connections open and
// warm), divided by the streams.
func (dl downloads) values(res *Result, beforeKiB int64, streams int) error {
	res.Values["gbit_s"] = float64(dl.bytes) * 8 / dl.elapsed.Seconds() / 1e9
	res.Values["downloads"] = float64(dl.completed)
	res.Values["errors"] = float64(dl.errs)
	if dl.peakRSSKiB > 0 {
		res.Values["kib_req"] = float64(dl.peakRSSKiB-beforeKiB) / float64(streams)
		res.Values["rss_peak_mib"] = float64(dl.peakRSSKiB) / 1024
	}
	if dl.firstErr != nil {
		res.Notes["first_error"] = dl.firstErr.Error()
	}
	if dl.bytes == 0 {
		return fmt.Errorf("no byte downloaded: %v", dl.firstErr)
	}
	return nil
}

// liveSample is what a target with a pprof endpoint holds live
// (liveBytes) with its connections warm, then midway through the
// downloads: the memory per request in flight without the RSS's noise,
// and the heap profile of the midway sample (NAME.heap-inflight.pprof).
type liveSample struct {
	p           *pprofClient // nil: no endpoint, nothing sampled
	name        string
	before, mid memStats
	err         error
}

func newLiveSample(p *pprofClient, res Result) *liveSample {
	s := &liveSample{p: p, name: profileName(res) + ".heap-inflight.pprof"}
	if p != nil {
		s.before, s.err = p.liveBytes(strings.TrimSuffix(s.name, ".pprof") + "-before.pprof")
	}
	return s
}

// during takes the sample midway.
func (s *liveSample) during() {
	if s.p != nil && s.err == nil {
		s.mid, s.err = s.p.liveBytes(s.name)
	}
}

// values records live_kib_req, the live heap per request in flight (as
// the last collection marked it: not the profile the sample built), and
// stack_kib_req, the change of all goroutine stacks per request (the
// connections' goroutines run before the downloads too: what moves is
// the other goroutines' stacks growing and shrinking, a few times 32
// KiB, so it stays apart).
func (s *liveSample) values(res *Result, streams int) {
	switch {
	case s.p == nil:
	case s.err != nil:
		res.Notes["live_error"] = s.err.Error()
	case s.mid.HeapLive > 0:
		per := func(a, b uint64) float64 { return (float64(b) - float64(a)) / 1024 / float64(streams) }
		res.Values["live_kib_req"] = per(s.before.HeapLive, s.mid.HeapLive)
		res.Values["stack_kib_req"] = per(s.before.StackInuse, s.mid.StackInuse)
	}
}
