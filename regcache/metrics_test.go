package regcache

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsContract: the snigate_cache_* series of the contract (and
// the ones added beside them) exist from Open on, labelled by route, and
// move with a fill, a hit and the bridge's counts.
func TestMetricsContract(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	c, err := Open(Config{Route: "registry", Dir: t.TempDir(), MaxSize: 1 << 20,
		Logger: slog.New(slog.DiscardHandler), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u := &upstream{b: newBlob(1000, 70)}
	fillAndRead(t, c, u)
	c.CountRequest(Miss)
	e, ok := c.Get(t.Context(), u.b.digest)
	if !ok {
		t.Fatal("not stored")
	}
	e.Close()
	c.CountRequest(Hit)
	c.CountRequest("nonsense")

	want := `
# HELP snigate_cache_bytes Bytes of content stored in the cache.
# TYPE snigate_cache_bytes gauge
snigate_cache_bytes{route="registry"} 1000
# HELP snigate_cache_requests_total Requests for cacheable content, by result: hit, miss, bypass or offline.
# TYPE snigate_cache_requests_total counter
snigate_cache_requests_total{result="bypass",route="registry"} 0
snigate_cache_requests_total{result="hit",route="registry"} 1
snigate_cache_requests_total{result="miss",route="registry"} 1
snigate_cache_requests_total{result="offline",route="registry"} 0
# HELP snigate_cache_upstream_bytes_total Bytes fetched from upstream to fill the cache.
# TYPE snigate_cache_upstream_bytes_total counter
snigate_cache_upstream_bytes_total{route="registry"} 1000
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"snigate_cache_bytes", "snigate_cache_requests_total", "snigate_cache_upstream_bytes_total"); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"snigate_cache_entries", "snigate_cache_fills_total",
		"snigate_cache_errors_total", "snigate_cache_corrupt_total", "snigate_cache_evicted_bytes_total"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
			t.Errorf("%s: %d series, %v", name, n, err)
		}
	}
	if s := c.Stats(); s.Hits != 1 || s.Misses != 1 || s.HitRatio != 0.5 {
		t.Errorf("Stats = %+v, want 1 hit, 1 miss, ratio 0.5", s)
	}

	m.DeleteRoute("registry")
	if n, _ := testutil.GatherAndCount(reg); n != 0 {
		t.Errorf("%d series left after DeleteRoute", n)
	}
}

// TestNilMetrics: a Cache without Metrics works and records nothing.
func TestNilMetrics(t *testing.T) {
	c, err := Open(Config{Dir: t.TempDir(), MaxSize: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fillAndRead(t, c, &upstream{b: newBlob(10, 71)})
	c.CountRequest(Hit)
	var m *Metrics
	m.DeleteRoute("registry")
}
