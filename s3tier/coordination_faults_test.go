package s3tier

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/internal/testkit"
)

// heartbeatFaults is one gateway's view of a shared store whose lease
// renewals (PUT If-Match on a lease) fail with 503 while failing says so:
// a store that is briefly unreachable from that gateway alone.
type heartbeatFaults struct {
	objects
	failing func(n int) bool // n: the renewal's count, from 1
	renewal atomic.Int32
}

func (h *heartbeatFaults) PutObject(ctx context.Context, bucket, key string, r io.Reader, size int64, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	if strings.Contains(key, "/leases/") || strings.HasPrefix(key, "leases/") {
		if opts.Header().Get("If-Match") != "" && h.failing(int(h.renewal.Add(1))) {
			return minio.UploadInfo{}, errorResponse(503, "ServiceUnavailable")
		}
	}
	return h.objects.PutObject(ctx, bucket, key, r, size, opts)
}

// TestOwnerKeepsItsLeaseThroughOneFailedRenewal: one renewal of a lease
// that the store refuses (a 503, a timeout) does not end the owner's
// heartbeat: it renews at the next beat, and a waiter never takes a live
// owner's lease over during two minutes of a slow registry. The bug: the
// heartbeat stopped at its first failure, so 30s later a waiter took the
// lease of a gateway still filling over and fetched the layer again.
func TestOwnerKeepsItsLeaseThroughOneFailedRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeObjects(time.Now())
		logs := testkit.NewLogSink()
		a := fakeTier(t, store, "a", 0, logs)
		a.cl = &heartbeatFaults{objects: store, failing: func(n int) bool { return n == 1 }}
		b := fakeTier(t, store, "b", 0, logs)
		defer a.Close()
		defer b.Close()
		reg := newRegistry(256 << 10)
		reg.hold = make(chan struct{})
		reg.fetched = make(chan int32, 4)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() { errs[0] = fleetFetch(a, reg) })
		<-reg.fetched // a holds the lease
		wg.Go(func() { errs[1] = fleetFetch(b, reg) })
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		during, log := reg.fetches.Load(), logs.String()
		close(reg.hold)
		wg.Wait()
		if during != 1 || strings.Contains(log, "took over") {
			t.Errorf("after one failed renewal and 2 minutes: %d registry fetches, want 1; log:\n%s", during, log)
		}
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}

// TestDeadOwnersLeaseTakenOverByOneOfSeveralWaiters: three gateways wait
// on the lease of a gateway that died mid-fill; after LeaseTTL each tries
// to take it over, exactly one wins and fetches, the two others read its
// content from the bucket; and no lease or marker is left. Also on a store
// that checks If-Match without a lock (SeaweedFS; here: ignores it): the
// bug was that there the takeovers (PUT If-Match the stale ETag) of
// waiters that overlap all succeeded, and each fetched the layer from the
// registry (TestSharedCacheFleet: two takeovers 16ms apart).
func TestDeadOwnersLeaseTakenOverByOneOfSeveralWaiters(t *testing.T) {
	tests := []struct {
		name          string
		ignoreIfMatch bool
	}{
		{name: "store honours If-Match"},
		{name: "store ignores If-Match", ignoreIfMatch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { takeOverByThree(t, tt.ignoreIfMatch) })
		})
	}
}

func takeOverByThree(t *testing.T, ignoreIfMatch bool) {
	store := newFakeObjects(time.Now())
	store.ignoreIfMatch = ignoreIfMatch
	logs := testkit.NewLogSink()
	reg := newRegistry(128 << 10)
	d, _ := parseDigest(reg.digest)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, name := range []string{"b", "c", "d"} {
		tier := fakeTier(t, store, name, time.Duration(i)*time.Minute, logs)
		defer tier.Close()
		if i == 0 {
			store.objs[tier.leaseKey(d)] = fakeObject{data: []byte(`{"owner":"dead"}`), etag: "dead"}
		}
		wg.Go(func() { errs[i] = fleetFetch(tier, reg) })
	}
	wg.Wait()
	synctest.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n, took := reg.fetches.Load(), strings.Count(logs.String(), "took over"); n != 1 || took != 1 {
		t.Errorf("registry fetches = %d, takeovers logged = %d, want 1 and 1; log:\n%s", n, took, logs)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for key := range store.objs {
		if strings.Contains(key, "leases/") {
			t.Errorf("left in the bucket: %s", key)
		}
	}
}

// TestOwnerWhoseLeaseWasTakenOverLeavesTheNewLease: a gateway whose
// renewals failed long enough for another to take its lease over learns
// it at its next renewal (412) and, when its own fill then ends, does not
// delete the lease, which is the new owner's: the waiters go on waiting on
// the new owner instead of fetching once more. The bug: the old owner's
// release deleted whatever lease was there.
func TestOwnerWhoseLeaseWasTakenOverLeavesTheNewLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeObjects(time.Now())
		logs := testkit.NewLogSink()
		var partitioned atomic.Bool
		partitioned.Store(true)
		a := fakeTier(t, store, "a", 0, logs)
		a.cl = &heartbeatFaults{objects: store, failing: func(int) bool { return partitioned.Load() }}
		b := fakeTier(t, store, "b", 0, logs)
		defer a.Close()
		defer b.Close()
		reg := newRegistry(64 << 10)
		d, _ := parseDigest(reg.digest)
		regA, regB := make(chan struct{}), newRegistry(64<<10)
		regB.hold = make(chan struct{})
		started := make(chan struct{})
		failA := func(ctx context.Context) (httpcache.Fetched, error) {
			close(started)
			<-regA
			return httpcache.Fetched{}, errors.New("registry: connection reset")
		}
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() {
			f, err := a.fetchFunc(d, failA)(context.Background())
			if err == nil {
				f.Body.Close()
			}
			errA = err
		})
		<-started // a holds the lease; its renewals fail from now on
		wg.Go(func() { errB = fleetFetch(b, regB) })
		time.Sleep(a.cfg.LeaseTTL + 5*time.Second) // b takes the lease over
		synctest.Wait()
		if !strings.Contains(logs.String(), "took over") {
			t.Fatalf("b did not take the stale lease over; log:\n%s", logs)
		}
		partitioned.Store(false)
		time.Sleep(a.cfg.LeaseTTL / 3) // a's next renewal: refused, the lease is b's
		synctest.Wait()
		close(regA) // a's own fill ends (failed) and releases its lease
		synctest.Wait()
		o, err := store.get(b.leaseKey(d))
		if err != nil || !strings.Contains(string(o.data), `"owner":"b"`) {
			t.Errorf("b's lease after a's release: %q (%v), want it still there", o.data, err)
		}
		close(regB.hold)
		wg.Wait()
		if errA == nil || errB != nil {
			t.Errorf("a's fill: %v (want its registry's error), b's: %v", errA, errB)
		}
	})
}

// beforeLease is one gateway's view of the shared store that runs hook
// once, just before that gateway's first lease PUT reaches the store.
type beforeLease struct {
	objects
	once sync.Once
	hook func()
}

func (b *beforeLease) PutObject(ctx context.Context, bucket, key string, r io.Reader, size int64, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	if strings.Contains(key, "leases/") {
		b.once.Do(b.hook)
	}
	return b.objects.PutObject(ctx, bucket, key, r, size, opts)
}

// TestLeaseWonJustAfterAnotherFillEndedReadsTheBucket: a gateway that
// found no content, and then won the digest's lease only because another
// gateway's fill ended (content uploaded, lease released) between its look
// and its lease, reads the content from the bucket rather than fetching
// it again. The bug: the lease's winner fetched from the registry without
// looking again (SeaweedFS, TestDeadGatewaysLeaseTakenOverOnceOnSeaweedFS
// under -race: two takeovers, two fetches).
func TestLeaseWonJustAfterAnotherFillEndedReadsTheBucket(t *testing.T) {
	store := newFakeObjects(time.Now())
	logs := testkit.NewLogSink()
	a := fakeTier(t, store, "a", 0, logs)
	b := fakeTier(t, store, "b", 0, logs)
	defer a.Close()
	defer b.Close()
	reg := newRegistry(256 << 10)
	var errA error
	b.cl = &beforeLease{objects: store, hook: func() { // b has looked: not there
		errA = fleetFetch(a, reg)
		a.wg.Wait() // a's upload and its lease's release
	}}
	if err := fleetFetch(b, reg); err != nil {
		t.Fatal(err)
	}
	if errA != nil {
		t.Fatal(errA)
	}
	b.wg.Wait()
	if n := reg.fetches.Load(); n != 1 {
		t.Errorf("registry fetches = %d, want 1 (a's; b reads the bucket)", n)
	}
	if _, err := store.get(b.leaseKey(mustDigest(t, reg.digest))); !notFound(err) {
		t.Errorf("a lease is left (%v)", err)
	}
}

func mustDigest(t *testing.T, s string) digest {
	t.Helper()
	d, err := parseDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLateTakerOfAFinishedTakeoverStandsDown: a waiter saw the dead
// gateway's lease unchanged for LeaseTTL, but before it acted another
// waiter took the lease over, filled and released it (lease and takeover
// marker removed). Its marker PUT then succeeds (the marker is gone), and
// on a store that does not refuse If-Match on a missing object
// (SeaweedFS) its lease PUT would create a lease and fetch again: the
// late taker stands down and leaves nothing in the bucket. The bug:
// SeaweedFS's registry saw two GETs of a layer
// (TestDeadGatewaysLeaseTakenOverOnceOnSeaweedFS, under load).
func TestLateTakerOfAFinishedTakeoverStandsDown(t *testing.T) {
	store := newFakeObjects(time.Now())
	store.ignoreIfMatch = true
	logs := testkit.NewLogSink()
	late := fakeTier(t, store, "late", 0, logs)
	defer late.Close()
	d, _ := parseDigest(newRegistry(1 << 10).digest)
	l, again, err := late.takeOver(context.Background(), d, "dead")
	if err != nil || l != nil || !again {
		t.Fatalf("takeOver of a lease already taken over and released: lease %v, again %v, err %v; want none, again", l != nil, again, err)
	}
	if strings.Contains(logs.String(), "took over") {
		t.Errorf("the late taker logged a takeover:\n%s", logs)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for key := range store.objs {
		t.Errorf("left in the bucket: %s", key)
	}
}
