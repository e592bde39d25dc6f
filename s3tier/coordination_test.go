package s3tier

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snigate/snigate/internal/testkit"
)

// fleetFetch runs tier's fetch of the fleet for reg's content and reads
// it whole, as a local fill does.
func fleetFetch(tier *Tier, reg *registry) error {
	d, err := parseDigest(reg.digest)
	if err != nil {
		return err
	}
	f, err := tier.fetchFunc(d, reg.fetch)(context.Background())
	if err != nil {
		return err
	}
	defer f.Body.Close()
	got, err := io.ReadAll(f.Body)
	if err == nil && !bytes.Equal(got, reg.body) {
		err = errors.New("read other bytes than the registry's")
	}
	return err
}

// TestLiveOwnerNeverTakenOverWhateverTheClocks: while the gateway that
// holds a digest's lease renews it, a waiter never takes it over, however
// far apart the two gateways' clocks are (an hour each way) and however
// old the store says the lease is (a Last-Modified ten years ago): ages are
// only the waiter's own clock between its own looks. Two minutes of a slow
// registry later, the registry was asked once, and the waiter reads the
// owner's content from the bucket once it is there.
func TestLiveOwnerNeverTakenOverWhateverTheClocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeObjects(time.Now().AddDate(-10, 0, 0)) // the store says the lease is ten years old
		logs := testkit.NewLogSink()
		a := fakeTier(t, store, "a", time.Hour, logs)
		b := fakeTier(t, store, "b", -time.Hour, logs)
		defer a.Close()
		defer b.Close()
		reg := newRegistry(1 << 20)
		reg.hold = make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, tier := range []*Tier{a, b} {
			wg.Go(func() { errs[i] = fleetFetch(tier, reg) })
		}
		time.Sleep(2 * time.Minute) // the registry is slow: 4 lease TTLs
		synctest.Wait()
		during, log := reg.fetches.Load(), logs.String()
		close(reg.hold)
		wg.Wait()
		if during != 1 || strings.Contains(log, "took over") {
			t.Errorf("after 2 minutes: %d registry fetches, want 1 (the lease's owner); log:\n%s", during, log)
		}
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if n := reg.fetches.Load(); n != 1 {
			t.Errorf("registry fetches = %d, want 1", n)
		}
	})
}

// TestDeadOwnersLeaseTakenOverAfterTTL: a lease nobody renews (its owner
// died mid-fill) is taken over once unchanged for LeaseTTL by the
// waiter's clock, not before; the waiter fetches, uploads and removes the
// lease.
func TestDeadOwnersLeaseTakenOverAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeObjects(time.Now())
		logs := testkit.NewLogSink()
		tier := fakeTier(t, store, "b", 0, logs)
		defer tier.Close()
		reg := newRegistry(256 << 10)
		d, _ := parseDigest(reg.digest)
		store.objs[tier.leaseKey(d)] = fakeObject{data: []byte(`{"owner":"dead"}`), etag: "dead"}
		start := time.Now()
		var wg sync.WaitGroup
		var err error
		wg.Go(func() { err = fleetFetch(tier, reg) })
		time.Sleep(tier.cfg.LeaseTTL - time.Second)
		synctest.Wait()
		if n := reg.fetches.Load(); n != 0 {
			t.Fatalf("the lease was taken over %s after it was first seen, before LeaseTTL (%s)", time.Since(start), tier.cfg.LeaseTTL)
		}
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the upload and the lease's release
		took := time.Since(start)
		if n := reg.fetches.Load(); n != 1 || took < tier.cfg.LeaseTTL {
			t.Errorf("registry fetches = %d after %s, want 1 after at least %s", n, took, tier.cfg.LeaseTTL)
		}
		if o, err := store.get(tier.objectKey(d)); err != nil || !bytes.Equal(o.data, reg.body) {
			t.Errorf("the bucket does not hold the content after the takeover (%v)", err)
		}
		if _, err := store.get(tier.leaseKey(d)); !notFound(err) {
			t.Errorf("the lease is still there (%v)", err)
		}
	})
}

// TestStoreFailingGoesToTheRegistry: with every S3 call failing, the
// fleet's fetch is the registry's at once, and the failure is counted.
func TestStoreFailingGoesToTheRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFakeObjects(time.Now())
		store.fail = errorResponse(503, "ServiceUnavailable")
		tier := fakeTier(t, store, "a", 0, testkit.NewLogSink())
		defer tier.Close()
		reg := newRegistry(64 << 10)
		if err := fleetFetch(tier, reg); err != nil {
			t.Fatal(err)
		}
		if n := reg.fetches.Load(); n != 1 {
			t.Errorf("registry fetches = %d, want 1", n)
		}
		if n := tier.m.totals.errs.Load(); n != 1 {
			t.Errorf("errors counted = %d, want 1", n)
		}
	})
}
