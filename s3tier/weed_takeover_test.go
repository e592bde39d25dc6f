package s3tier

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// TestDeadGatewaysLeaseTakenOverOnceOnSeaweedFS: three gateways find the
// lease of a dead one at the same moment and each sees it unchanged for
// LeaseTTL; on SeaweedFS one of them takes it over (through the takeover
// marker), the registry is asked once, and neither lease nor marker is
// left. (SeaweedFS checks If-Match without a lock, so two takeovers whose
// PUTs overlap both succeeded before the marker; this test does not force
// the overlap, TestDeadOwnersLeaseTakenOverByOneOfSeveralWaiters does.)
func TestDeadGatewaysLeaseTakenOverOnceOnSeaweedFS(t *testing.T) {
	w := startWeed(t)
	reg := newRegistry(64 << 10)
	gws := []*gateway{newGateway(t, w, "a"), newGateway(t, w, "b"), newGateway(t, w, "c")}
	d, _ := parseDigest(reg.digest)
	if _, err := w.Client.PutObject(context.Background(), testBucket, gws[0].tier.leaseKey(d),
		strings.NewReader(`{"owner":"dead","digest":"`+reg.digest+`","beat":7}`), -1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	lookCountingClocks(t, w, gws, d)
	var wg sync.WaitGroup
	for _, g := range gws {
		wg.Go(func() {
			e, err := g.store.Fill(context.Background(), reg.digest, reg.fetch)
			if err != nil {
				t.Error(err)
				return
			}
			readAll(t, e, reg.body)
		})
	}
	wg.Wait()
	took := 0
	for _, g := range gws {
		g.tier.wg.Wait()
		took += strings.Count(g.logBuf.String(), "took over")
	}
	if n := reg.fetches.Load(); n != 1 || took != 1 {
		t.Errorf("registry fetches = %d, takeovers = %d, want 1 and 1", n, took)
	}
	for oi := range w.Client.ListObjects(context.Background(), testBucket, minio.ListObjectsOptions{Prefix: "test/leases/", Recursive: true}) {
		t.Errorf("left in the bucket: %s %v", oi.Key, oi.Err)
	}
}

// lookCountingClocks gives each gateway a clock that moves a third of
// the lease TTL at each look, so that the dead lease (in the bucket now)
// soon looks unchanged for LeaseTTL, and no pause between looks.
//
// The clocks stop once one gateway has begun to take the dead lease over
// (its takeover marker is in the bucket), so that the new owner's live
// lease (renewed every third of the real TTL) never looks dead however
// slowly its fill goes on a loaded machine.
func lookCountingClocks(t *testing.T, w *weed, gws []*gateway, d digest) {
	t.Helper()
	dead, err := w.Client.StatObject(context.Background(), testBucket, gws[0].tier.leaseKey(d), minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var frozen atomic.Bool
	marker := gws[0].tier.takeoverKey(d, dead.ETag)
	takingOver := func() bool {
		if !frozen.Load() {
			_, err := w.Client.StatObject(context.Background(), testBucket, marker, minio.StatObjectOptions{})
			frozen.Store(err == nil)
		}
		return frozen.Load()
	}
	for _, g := range gws {
		clock := time.Unix(1_700_000_000, 0)
		var mu sync.Mutex
		g.tier.now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			if !takingOver() {
				clock = clock.Add(g.tier.cfg.LeaseTTL / 3)
			}
			return clock
		}
		g.tier.pauseFunc = func(context.Context, time.Duration) error { return nil }
	}
}
