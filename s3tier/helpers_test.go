package s3tier

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/internal/cachestore"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/regcache"
)

// gateway is one gateway's cache of a route: a local tier of its own and
// the shared tier on the test's weed.
type gateway struct {
	local  *regcache.Cache
	tier   *Tier
	store  *Tiered
	reg    *prometheus.Registry
	logBuf *testkit.LogSink
}

func newGateway(t *testing.T, w *weed, name string, tune ...func(*Config)) *gateway {
	t.Helper()
	lc, err := regcache.Open(regcache.Config{Route: "r", Dir: t.TempDir(), MaxSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{local: lc, reg: prometheus.NewRegistry(), logBuf: testkit.NewLogSink()}
	cfg := w.config(t, "r")
	cfg.Owner = name
	cfg.Metrics = NewMetrics(g.reg)
	cfg.Logger = slog.New(slog.NewTextHandler(g.logBuf, nil))
	for _, f := range tune {
		f(&cfg)
	}
	tier, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.tier = tier
	g.store = &Tiered{Local: cachestore.Local{C: lc}, Shared: tier}
	t.Cleanup(func() {
		tier.Close()
		lc.Close()
	})
	return g
}

// shared is a value of snigate_cache_shared_requests_total or _bytes_total.
func (g *gateway) requests(result string) float64 {
	return testutil.ToFloat64(g.tier.cfg.Metrics.requests.WithLabelValues("r", result))
}

func (g *gateway) bytes(direction string) float64 {
	return testutil.ToFloat64(g.tier.cfg.Metrics.bytes.WithLabelValues("r", direction))
}

// registry is a test registry's content: a fetch that counts its calls
// and can be held until released.
type registry struct {
	body    []byte
	digest  string
	fetches atomic.Int32
	hold    chan struct{} // nil: answer at once
	fetched chan int32    // nil, else told the count of each fetch (buffered)
}

func newRegistry(size int) *registry {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	sum := sha256.Sum256(b)
	return &registry{body: b, digest: "sha256:" + hex.EncodeToString(sum[:])}
}

func (r *registry) fetch(ctx context.Context) (httpcache.Fetched, error) {
	n := r.fetches.Add(1)
	if r.fetched != nil {
		r.fetched <- n
	}
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return httpcache.Fetched{}, ctx.Err()
		}
	}
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	return httpcache.Fetched{Body: io.NopCloser(bytes.NewReader(r.body)), Header: h, Size: int64(len(r.body))}, nil
}

// readAll reads e whole, then closes it, and checks it is want.
func readAll(t *testing.T, e httpcache.Entry, want []byte) {
	t.Helper()
	defer e.Close()
	got, err := io.ReadAll(e)
	if err != nil {
		t.Fatalf("read entry: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes that differ from the %d wanted", len(got), len(want))
	}
	if err := e.Verified(); err != nil {
		t.Fatalf("Verified: %v", err)
	}
}

// object returns the bucket's object of dgst (nil when absent).
func (w *weed) object(t *testing.T, tier *Tier, dgst string) []byte {
	t.Helper()
	d, _ := parseDigest(dgst)
	obj, err := w.Client.GetObject(context.Background(), testBucket, tier.objectKey(d), minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if notFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}
