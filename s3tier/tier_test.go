package s3tier

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// TestFillStoresBothTiersAndAnotherGatewayReadsIt: a fill from the
// registry on gateway a is stored in a's local tier and, verified, in the
// bucket; gateway b, empty, serves it from the bucket without the
// registry, and its local tier then holds it.
func TestFillStoresBothTiersAndAnotherGatewayReadsIt(t *testing.T) {
	w := startWeed(t)
	reg := newRegistry(20<<20 + 12345) // more than one multipart part
	a, b := newGateway(t, w, "a"), newGateway(t, w, "b")
	ctx := context.Background()

	if _, ok := a.store.Get(ctx, reg.digest); ok {
		t.Fatal("Get before any fill: a hit")
	}
	e, err := a.store.Fill(ctx, reg.digest, reg.fetch)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, e, reg.body)
	a.tier.wg.Wait() // the upload and the lease's heartbeat are over
	if got := w.object(t, a.tier, reg.digest); !bytes.Equal(got, reg.body) {
		t.Fatalf("bucket holds %d bytes, want the %d of the fill; log:\n%s", len(got), len(reg.body), a.logBuf)
	}
	if got := a.bytes(directionWritten); got != float64(len(reg.body)) {
		t.Errorf("bytes written = %v, want %d", got, len(reg.body))
	}

	e, ok := b.store.Get(ctx, reg.digest)
	if !ok {
		t.Fatalf("gateway b: Get missed what a stored in the bucket; b's log:\n%s", b.logBuf)
	}
	readAll(t, e, reg.body)
	if n := reg.fetches.Load(); n != 1 {
		t.Errorf("registry fetches = %d, want 1", n)
	}
	if got := b.requests(resultHit); got != 1 {
		t.Errorf("b's shared hits = %v, want 1", got)
	}
	if got := b.bytes(directionRead); got != float64(len(reg.body)) {
		t.Errorf("b's bytes read = %v, want %d", got, len(reg.body))
	}
	if _, ok := b.local.Get(ctx, reg.digest); !ok {
		t.Error("b's local tier does not hold what it read from the bucket")
	}
}

// TestCorruptObjectIsNotServedAndIsReplaced: an object overwritten in
// the bucket with other bytes (its metadata still naming the digest) is
// not served: the Get misses, the object is removed, and the next fill
// fetches from the registry and stores the right bytes again.
func TestCorruptObjectIsNotServedAndIsReplaced(t *testing.T) {
	w := startWeed(t)
	reg := newRegistry(300 << 10)
	a, b := newGateway(t, w, "a"), newGateway(t, w, "b")
	ctx := context.Background()
	e, err := a.store.Fill(ctx, reg.digest, reg.fetch)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, e, reg.body)
	a.tier.wg.Wait()

	bad := bytes.Clone(reg.body)
	bad[len(bad)/2] ^= 0xff
	d, _ := parseDigest(reg.digest)
	if _, err := w.Client.PutObject(ctx, testBucket, a.tier.objectKey(d), bytes.NewReader(bad), int64(len(bad)),
		minio.PutObjectOptions{UserMetadata: map[string]string{metaDigest: reg.digest}}); err != nil {
		t.Fatal(err)
	}
	if e, ok := b.store.Get(ctx, reg.digest); ok {
		e.Close()
		t.Fatal("a corrupt object was served")
	}
	if got := w.object(t, a.tier, reg.digest); got != nil {
		t.Fatalf("the corrupt object is still in the bucket (%d bytes)", len(got))
	}
	if got := b.requests(resultError); got != 1 {
		t.Errorf("b's shared errors = %v, want 1", got)
	}
	if !strings.Contains(b.logBuf.String(), "reason=corrupt") {
		t.Errorf("no log line of the corrupt object:\n%s", b.logBuf)
	}
	e, err = b.store.Fill(ctx, reg.digest, reg.fetch)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, e, reg.body)
	b.tier.wg.Wait()
	if n := reg.fetches.Load(); n != 2 {
		t.Errorf("registry fetches = %d, want 2 (the first fill and the replacement)", n)
	}
	if got := w.object(t, a.tier, reg.digest); !bytes.Equal(got, reg.body) {
		t.Fatalf("the object was not replaced with the right bytes (%d bytes)", len(got))
	}
}

// TestMismatchedFillIsNotUploaded: registry bytes that do not match the
// digest fail the fill and leave nothing under the digest's key (the
// upload is aborted, not completed), nor a lease.
func TestMismatchedFillIsNotUploaded(t *testing.T) {
	w := startWeed(t)
	reg := newRegistry(17 << 20)
	good := reg.digest
	reg.body[0] ^= 1
	a := newGateway(t, w, "a")
	e, err := a.store.Fill(context.Background(), good, reg.fetch)
	if err != nil {
		t.Fatal(err)
	}
	_, rerr := io.ReadAll(e)
	e.Close()
	if rerr == nil {
		t.Fatal("a fill of the wrong bytes read to the end without error")
	}
	a.tier.wg.Wait()
	if got := w.object(t, a.tier, good); got != nil {
		t.Fatalf("the bucket holds %d bytes under a digest they do not match", len(got))
	}
	d, _ := parseDigest(good)
	if _, err := w.Client.StatObject(context.Background(), testBucket, a.tier.leaseKey(d), minio.StatObjectOptions{}); !notFound(err) {
		t.Fatalf("the lease is still there (stat: %v)", err)
	}
}

// TestGatewaysRacingOneDigestFetchOnce: three gateways fill one digest at
// the same moment: one takes the lease and fetches from the registry,
// the two others wait on it and read the bucket once it is there; the
// registry is asked once and every gateway gets the bytes.
func TestGatewaysRacingOneDigestFetchOnce(t *testing.T) {
	w := startWeed(t)
	reg := newRegistry(6 << 20)
	reg.hold = make(chan struct{})
	reg.fetched = make(chan int32, 8)
	pauses, twoWait := countedPauses(2)
	var gws []*gateway
	for _, name := range []string{"a", "b", "c"} {
		g := newGateway(t, w, name)
		g.tier.pauseFunc = pauses(name)
		gws = append(gws, g)
	}
	errs := fillAll(gws, reg)
	// the registry answers once two gateways wait on the third's lease (or
	// once a second gateway fetches: the lease failed, the test fails)
	for waiting := false; !waiting; {
		select {
		case <-twoWait:
			waiting = true
		case n := <-reg.fetched:
			waiting = n > 1
		}
	}
	close(reg.hold)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := reg.fetches.Load(); n != 1 {
		t.Fatalf("registry fetches = %d, want 1 for the fleet", n)
	}
}

// countedPauses returns the tiers' pause functions by gateway name (a
// real wait of d, cut by ctx) and a channel closed once n gateways have
// paused, that is, waited on another's lease.
func countedPauses(n int) (func(name string) func(context.Context, time.Duration) error, <-chan struct{}) {
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	return func(name string) func(context.Context, time.Duration) error {
		return func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			if !seen[name] {
				seen[name] = true
				if len(seen) == n {
					close(done)
				}
			}
			mu.Unlock()
			timer := time.NewTimer(d)
			defer timer.Stop()
			select {
			case <-timer.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}, done
}

// fillAll fills reg's digest through every gateway at once; the channel
// gets each fill's error (nil: the whole body, byte for byte) and is
// closed when all have ended.
func fillAll(gws []*gateway, reg *registry) <-chan error {
	errs := make(chan error, len(gws))
	var wg sync.WaitGroup
	for _, g := range gws {
		wg.Go(func() {
			e, err := g.store.Fill(context.Background(), reg.digest, reg.fetch)
			if err != nil {
				errs <- err
				return
			}
			defer e.Close()
			got, err := io.ReadAll(e)
			if err == nil && !bytes.Equal(got, reg.body) {
				err = io.ErrUnexpectedEOF
			}
			errs <- err
		})
	}
	go func() { wg.Wait(); close(errs) }()
	return errs
}

// TestLeaseOfDeadGatewayTakenOver: a lease left by a gateway that died
// mid-fill (it never changes again) is taken over once it stays
// unchanged for LeaseTTL by the waiter's own clock; the waiter fetches
// from the registry, stores the content and removes the lease.
func TestLeaseOfDeadGatewayTakenOver(t *testing.T) {
	w := startWeed(t)
	reg := newRegistry(64 << 10)
	a := newGateway(t, w, "a")
	d, _ := parseDigest(reg.digest)
	if _, err := w.Client.PutObject(context.Background(), testBucket, a.tier.leaseKey(d),
		strings.NewReader(`{"owner":"dead","digest":"`+reg.digest+`","beat":7}`), -1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	a.tier.now = func() time.Time { // each look is a third of the TTL later
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(a.tier.cfg.LeaseTTL / 3)
		return clock
	}
	a.tier.pauseFunc = func(context.Context, time.Duration) error { return nil }
	e, err := a.store.Fill(context.Background(), reg.digest, reg.fetch)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, e, reg.body)
	a.tier.wg.Wait()
	if n := reg.fetches.Load(); n != 1 {
		t.Errorf("registry fetches = %d, want 1", n)
	}
	if got := w.object(t, a.tier, reg.digest); !bytes.Equal(got, reg.body) {
		t.Errorf("bucket holds %d bytes after the takeover, want %d", len(got), len(reg.body))
	}
	if _, err := w.Client.StatObject(context.Background(), testBucket, a.tier.leaseKey(d), minio.StatObjectOptions{}); !notFound(err) {
		t.Errorf("the lease is still there (stat: %v)", err)
	}
	if !strings.Contains(a.logBuf.String(), "took over") {
		t.Errorf("no log line of the takeover:\n%s", a.logBuf)
	}
}

// TestStoreOutageNeverFailsAPull: with SeaweedFS killed, Get misses at
// once and a fill goes to the registry (errors counted, logged once); once
// it is back, the tier is used again.
func TestStoreOutageNeverFailsAPull(t *testing.T) {
	w := startWeed(t)
	a := newGateway(t, w, "a")
	ctx := context.Background()
	w.Stop()

	reg := newRegistry(128 << 10)
	start := time.Now()
	if _, ok := a.store.Get(ctx, reg.digest); ok {
		t.Fatal("a hit with the store down")
	}
	e, err := a.store.Fill(ctx, reg.digest, reg.fetch)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, e, reg.body)
	if took := time.Since(start); took > a.tier.cfg.CallTimeout {
		t.Errorf("the pull took %v with the store down, more than one call's timeout", took)
	}
	if got := a.requests(resultError); got < 2 {
		t.Errorf("shared errors = %v, want the Get's and the Fill's", got)
	}
	if n := strings.Count(a.logBuf.String(), "reason=stat"); n != 1 {
		t.Errorf("%d log lines of the outage, want 1 (rate-limited):\n%s", n, a.logBuf)
	}

	w.Restart()
	reg2 := newRegistry(256 << 10)
	e, err = a.store.Fill(ctx, reg2.digest, reg2.fetch)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, e, reg2.body)
	a.tier.wg.Wait()
	if got := w.object(t, a.tier, reg2.digest); !bytes.Equal(got, reg2.body) {
		t.Fatalf("after the restart the bucket holds %d bytes, want %d", len(got), len(reg2.body))
	}
	b := newGateway(t, w, "b")
	e, ok := b.store.Get(ctx, reg2.digest)
	if !ok {
		t.Fatal("after the restart, gateway b missed what a stored")
	}
	readAll(t, e, reg2.body)
}
