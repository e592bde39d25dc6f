package regcache

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs with opts on a new directory for the test
// (root only: skipped otherwise).
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestDiskFullBypasses: on a 1MiB filesystem, a 2MiB blob of announced
// size is refused before its first byte (ErrBypass: the bridge serves it
// from upstream), one of unknown size fails its readers when the disk
// fills (never a clean end), and both are counted as nospace; nothing is
// left behind.
func TestDiskFullBypasses(t *testing.T) {
	tests := []struct {
		name      string
		size      int64 // announced
		failsFill bool  // Fill itself fails; else Fill or the reads do
	}{
		{name: "size announced", size: 0, failsFill: true},
		{name: "size unknown", size: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := mountTmpfs(t, "size=1m")
			c := openTest(t, dir, 1<<40)
			u := &upstream{b: newBlob(2<<20, 10), size: tt.size}
			e, err := c.Fill(t.Context(), u.b.digest, u.fetch)
			switch {
			case tt.failsFill && !errors.Is(err, ErrBypass):
				t.Fatalf("Fill error = %v, want ErrBypass", err)
			case !tt.failsFill && err == nil:
				// The disk filled after this reader started: its reads fail.
				if _, err := readAll(e); !errors.Is(err, ErrBypass) || !errors.Is(err, ErrFillFailed) {
					t.Fatalf("reading the fill: %v, want ErrFillFailed and ErrBypass", err)
				}
			case !tt.failsFill && (!errors.Is(err, ErrBypass) || !errors.Is(err, ErrFillFailed)):
				// The disk filled before Fill returned: it says so.
				t.Fatalf("Fill error = %v, want ErrFillFailed and ErrBypass", err)
			}
			if got := testutil.ToFloat64(c.m.errors[reasonNoSpace]); got != 1 {
				t.Errorf("snigate_cache_errors_total{reason=nospace} = %v, want 1", got)
			}
			if s := c.Stats(); s.Errors != 1 || s.Entries != 0 {
				t.Errorf("Stats = %+v, want 1 error, no entry", s)
			}
			waitFillsDone(t, c)
			if files := storedFiles(t, dir); len(files) != 0 {
				t.Errorf("files left: %v", files)
			}
		})
	}
}

// TestDiskFullEvictsFirst: when the disk is full before max_size is
// reached, stored content is removed (least recently used first) to make
// room for a fill of announced size.
func TestDiskFullEvictsFirst(t *testing.T) {
	dir := mountTmpfs(t, "size=1m")
	c := openTest(t, dir, 1<<40)
	old, next := &upstream{b: newBlob(600<<10, 11)}, &upstream{b: newBlob(600<<10, 12)}
	fillAndRead(t, c, old)
	fillAndRead(t, c, next)
	if _, ok := c.Get(t.Context(), old.b.digest); ok {
		t.Fatal("the older blob is still stored on a disk too small for both")
	}
	e, ok := c.Get(t.Context(), next.b.digest)
	if !ok {
		t.Fatal("the new blob was not stored")
	}
	e.Close()
	if got := testutil.ToFloat64(c.m.errors[reasonNoSpace]); got != 0 {
		t.Errorf("snigate_cache_errors_total{reason=nospace} = %v, want 0 (room was made)", got)
	}
}

// TestUnwritableDirBypasses: a read-only cache directory does not stop
// Open (the route keeps serving); Stats says why, and every Fill bypasses,
// counted as unwritable.
func TestUnwritableDirBypasses(t *testing.T) {
	dir := mountTmpfs(t, "size=1m")
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("remount read-only: %v", err)
	}
	c := openTest(t, dir, 1<<30)
	if c.Stats().Unavailable == "" {
		t.Error("Stats().Unavailable is empty for a read-only directory")
	}
	u := &upstream{b: newBlob(100, 13)}
	for i := range 2 {
		if _, err := c.Fill(t.Context(), u.b.digest, u.fetch); !errors.Is(err, ErrBypass) {
			t.Fatalf("Fill %d error = %v, want ErrBypass", i, err)
		}
	}
	if got := testutil.ToFloat64(c.m.errors[reasonUnwritable]); got != 1 {
		t.Errorf("snigate_cache_errors_total{reason=unwritable} = %v, want 1 (counted at Open)", got)
	}
	if u.fetches.Load() != 0 {
		t.Errorf("%d fetches by the cache, want none (the bridge fetches itself)", u.fetches.Load())
	}
}

// waitFillsDone closes c, which waits for its fill goroutines.
func waitFillsDone(t *testing.T, c *Cache) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatal(fmt.Errorf("close: %w", err))
	}
}

var _ io.Reader = (*Entry)(nil)
