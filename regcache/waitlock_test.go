package regcache

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

// TestWaitForLockTakesOverAfterTheHolder: an upgrade's new process opens
// the directory its predecessor still holds: with WaitForLock it bypasses
// (no error, nothing served, Unavailable says why) until the holder closes,
// then it opens the directory and serves what the holder stored.
func TestWaitForLockTakesOverAfterTheHolder(t *testing.T) {
	old := LockRetry
	LockRetry = 5 * time.Millisecond
	t.Cleanup(func() { LockRetry = old })
	dir := t.TempDir()
	holder := openTest(t, dir, 1<<30)
	u := &upstream{b: newBlob(4096, 7)}
	fillAndRead(t, holder, u)

	next, err := Open(Config{Route: "registry", Dir: dir, MaxSize: 1 << 30, WaitForLock: true,
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(nil)})
	if err != nil {
		t.Fatalf("Open with WaitForLock on a held directory: %v", err)
	}
	t.Cleanup(func() { next.Close() })
	if s := next.Stats(); s.Unavailable == "" || s.Entries != 0 {
		t.Fatalf("while held: %+v; want unavailable and empty", s)
	}
	if _, err := next.Fill(t.Context(), u.b.digest, u.fetch); !errors.Is(err, ErrBypass) {
		t.Fatalf("Fill while held: %v, want ErrBypass", err)
	}
	holder.Close()
	deadline := time.Now().Add(10 * time.Second)
	for next.Stats().Unavailable != "" {
		if time.Now().After(deadline) {
			t.Fatalf("the lock was released, the cache still says: %s", next.Stats().Unavailable)
		}
		time.Sleep(LockRetry)
	}
	e, ok := next.Get(t.Context(), u.b.digest)
	if !ok {
		t.Fatal("after taking over, the holder's content is not served")
	}
	e.Close()
	if n := u.fetches.Load(); n != 1 {
		t.Errorf("upstream fetched %d times, want 1", n)
	}
}

// TestWaitForLockClosedWhileWaiting: closing a cache that waits ends the
// wait and holds no lock afterwards.
func TestWaitForLockClosedWhileWaiting(t *testing.T) {
	dir := t.TempDir()
	holder := openTest(t, dir, 1<<30)
	next, err := Open(Config{Route: "registry", Dir: dir, MaxSize: 1 << 30, WaitForLock: true,
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	holder.Close()
	openTest(t, dir, 1<<30) // the directory is free
}
