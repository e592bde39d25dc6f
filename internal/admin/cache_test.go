package admin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/snigate/snigate/regcache"
)

// fakeCaches records the purges it was asked for.
type fakeCaches struct {
	mu     sync.Mutex
	purged []string
}

var someCaches = []regcache.Stats{{Route: "registry", Dir: "/var/cache/snigate/registry", MaxSize: 50 << 30,
	Bytes: 3 << 29, Entries: 212, Hits: 1400, Misses: 200, HitRatio: 0.875}}

func (f *fakeCaches) CacheStats() []regcache.Stats { return someCaches }

func (f *fakeCaches) PurgeCache(d string) ([]regcache.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.purged = append(f.purged, d)
	return someCaches, nil
}

// TestCacheAPI: GET /api/cache and POST /api/cache/purge through the
// Client that `snigate ctl cache` uses.
func TestCacheAPI(t *testing.T) {
	const d = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	f := &fakeCaches{}
	_, addr := startServer(t, Config{Caches: f}, "127.0.0.1:0")
	c := &Client{Addr: addr}
	st, err := c.Caches(context.Background())
	if err != nil || len(st) != 1 || st[0].Entries != 212 {
		t.Fatalf("Caches: %+v %v", st, err)
	}
	if _, err := c.PurgeCache(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PurgeCache(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.purged, ",") != d+"," {
		t.Errorf("purged %q, want the digest then everything", f.purged)
	}
	tests := []struct {
		name, contentType, body string
		code                    int
	}{
		{name: "not a digest", contentType: "application/json", body: `{"digest":"latest"}`, code: 400},
		{name: "unknown field", contentType: "application/json", body: `{"all":true}`, code: 400},
		{name: "not json", contentType: "text/plain", body: `{}`, code: 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a := call(t, "POST", addr, "/api/cache/purge", tt.contentType, tt.body); a.code != tt.code {
				t.Errorf("POST %s: %d, want %d", tt.body, a.code, tt.code)
			}
		})
	}
	if a := call(t, "GET", addr, "/api/cache/purge", "", ""); a.code != 405 {
		t.Errorf("GET /api/cache/purge: %d, want 405", a.code)
	}
}

// TestCacheAPIUnavailable: without caches (a process without the runtime
// API) the endpoints answer 503.
func TestCacheAPIUnavailable(t *testing.T) {
	_, addr := startServer(t, Config{}, "127.0.0.1:0")
	_, err := (&Client{Addr: addr}).Caches(context.Background())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Errorf("error %v, want HTTP 503", err)
	}
}

func TestWriteCacheTableGolden(t *testing.T) {
	var b strings.Builder
	if err := WriteCacheTable(&b, someCaches); err != nil {
		t.Fatal(err)
	}
	want := `ROUTE     DIR                          SIZE    MAX_SIZE  ENTRIES  FILLS  HIT_RATIO  REQUESTS  ERRORS
registry  /var/cache/snigate/registry  1.5GiB  50GiB     212      0      87.5%      1600      0
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
