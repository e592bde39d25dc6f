package s3tier

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/cachestore"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/regcache"
)

// fakeGateway is one gateway's store over a bucket in memory: a real
// local tier (with its metrics on reg) and a Tier on f.
type fakeGateway struct {
	local *regcache.Cache
	tier  *Tier
	store *Tiered
	reg   *prometheus.Registry
}

func newFakeGateway(t *testing.T, f *fakeObjects, name string) *fakeGateway {
	t.Helper()
	reg := prometheus.NewRegistry()
	lc, err := regcache.Open(regcache.Config{Route: "r", Dir: t.TempDir(), MaxSize: 1 << 30,
		Metrics: regcache.NewMetrics(reg), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tier := fakeTier(t, f, name, 0, testkit.NewLogSink())
	t.Cleanup(func() {
		tier.Close()
		lc.Close()
	})
	return &fakeGateway{local: lc, tier: tier, store: &Tiered{Local: cachestore.Local{C: lc}, Shared: tier}, reg: reg}
}

// upstreamBytes is the gateway's snigate_cache_upstream_bytes_total, and
// the same figure in its local tier's Stats (snigate ctl cache).
func (g *fakeGateway) upstreamBytes(t *testing.T) (metric float64, stats int64) {
	t.Helper()
	v, ok := testkit.Gathered(t, g.reg, "snigate_cache_upstream_bytes_total", map[string]string{"route": "r"})
	if !ok {
		t.Fatal("no snigate_cache_upstream_bytes_total{route=\"r\"}")
	}
	return v, g.local.Stats().UpstreamBytes
}

// TestUpstreamBytesCountTheRegistryOnly: snigate_cache_upstream_bytes_total
// (and ctl cache's upstream_bytes) counts the bytes a gateway fetched from
// the registry, never those its local tier read from the bucket, which
// count in snigate_cache_shared_bytes_total{direction="read"}. The bug:
// every local fill counted its bytes as upstream bytes, so a fleet's
// gateways reported the bucket's reads as uplink traffic (a layer fetched
// once for three gateways showed three times its size).
func TestUpstreamBytesCountTheRegistryOnly(t *testing.T) {
	f := newFakeObjects(time.Now())
	reg := newRegistry(3<<20 + 77)
	size := float64(len(reg.body))
	a, b, c := newFakeGateway(t, f, "a"), newFakeGateway(t, f, "b"), newFakeGateway(t, f, "c")
	ctx := context.Background()

	e, err := a.store.Fill(ctx, reg.digest, reg.fetch) // from the registry, uploaded
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, e, reg.body)
	a.tier.wg.Wait()
	e, ok := b.store.Get(ctx, reg.digest) // a local miss read from the bucket
	if !ok {
		t.Fatal("b: Get missed the content a stored in the bucket")
	}
	readAll(t, e, reg.body)
	e, err = c.store.Fill(ctx, reg.digest, reg.fetch) // a fill that finds the bucket's content
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, e, reg.body)

	tests := []struct {
		name     string
		g        *fakeGateway
		upstream float64
		read     float64
	}{
		{name: "fetched from the registry", g: a, upstream: size, read: 0},
		{name: "Get read from the bucket", g: b, upstream: 0, read: size},
		{name: "Fill read from the bucket", g: c, upstream: 0, read: size},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			metric, stats := tt.g.upstreamBytes(t)
			if metric != tt.upstream || stats != int64(tt.upstream) {
				t.Errorf("snigate_cache_upstream_bytes_total = %v, Stats().UpstreamBytes = %d, want %v", metric, stats, tt.upstream)
			}
			if got := testkit.Value(t, tt.g.tier.cfg.Metrics.bytes.WithLabelValues("r", directionRead)); got != tt.read {
				t.Errorf("snigate_cache_shared_bytes_total{direction=\"read\"} = %v, want %v", got, tt.read)
			}
		})
	}
	if n := reg.fetches.Load(); n != 1 {
		t.Errorf("registry fetches = %d, want 1", n)
	}
}
