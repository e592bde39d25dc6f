package regcache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/snigate/snigate/regcache"
)

// Example_cache shows the lifecycle of a Cache as the HTTP bridge uses
// it: open it once, answer a miss by Fill (one fetch, however many ask),
// a later request by Get, bypass on ErrBypass, count each request's result.
func Example_cache() {
	dir, _ := os.MkdirTemp("", "regcache-example")
	defer os.RemoveAll(dir)
	maxSize, _ := regcache.ParseSize("50GiB")
	cache, err := regcache.Open(regcache.Config{
		Route:   "registry",
		Dir:     dir,
		MaxSize: maxSize,
		Logger:  slog.New(slog.DiscardHandler),
		Metrics: regcache.NewMetrics(nil), // once per process, with the real registerer
	})
	if err != nil {
		panic(err)
	}
	defer cache.Close()

	layer := []byte("a layer's bytes")
	digest := fmt.Sprintf("sha256:%x", sha256.Sum256(layer))
	fetch := func(ctx context.Context) (regcache.Fetched, error) {
		// The bridge: GET /v2/<name>/blobs/<digest> upstream with ctx, the
		// node's headers; a non-200 answer is returned as an error.
		return regcache.Fetched{
			Body:   io.NopCloser(bytes.NewReader(layer)),
			Header: http.Header{"Content-Type": {"application/octet-stream"}},
			Size:   int64(len(layer)),
		}, nil
	}

	serve := func(ctx context.Context) {
		e, hit := cache.Get(ctx, digest) // the bridge asks the registry (HEAD) before serving a hit
		result := regcache.Hit
		if !hit {
			e, err = cache.Fill(ctx, digest, fetch)
			result = regcache.Miss
		}
		if errors.Is(err, regcache.ErrBypass) {
			cache.CountRequest(regcache.Bypass) // and serve it from upstream
			return
		}
		if err != nil {
			panic(err)
		}
		defer e.Close()
		cache.CountRequest(result)
		var body bytes.Buffer // the bridge: http.ServeContent(w, r, "", time.Time{}, e)
		if _, err := io.Copy(&body, e); err != nil {
			panic(err) // a broken fill: abort the response, never end it cleanly
		}
		fmt.Printf("%s: %q (%s)\n", result, body.String(), e.Header().Get("Content-Type"))
	}
	serve(context.Background())
	serve(context.Background())
	s := cache.Stats()
	fmt.Printf("entries %d, bytes %d, hit ratio %.1f\n", s.Entries, s.Bytes, s.HitRatio)
	// Output:
	// miss: "a layer's bytes" (application/octet-stream)
	// hit: "a layer's bytes" (application/octet-stream)
	// entries 1, bytes 15, hit ratio 0.5
}
