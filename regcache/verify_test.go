package regcache

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// flipByte changes one byte of path in place (same inode and size).
func flipByte(t *testing.T, path string, keepMtime bool) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, fi.Size()/2)
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if keepMtime {
		os.Chtimes(path, fi.ModTime(), fi.ModTime())
	} else {
		later := fi.ModTime().Add(time.Second) // a coarse clock must not hide the change
		os.Chtimes(path, later, later)
	}
}

// TestCorruptFileRefetched: a stored file with one byte changed is
// verified before it is served (after a restart, or at once when its
// mtime moved), removed, counted, and filled again from upstream.
func TestCorruptFileRefetched(t *testing.T) {
	tests := []struct {
		name    string
		restart bool
		keep    bool // put the mtime back (the ctime still moves)
	}{
		{name: "changed while running", restart: false},
		{name: "changed while running, mtime restored", restart: false, keep: true},
		{name: "changed while stopped", restart: true},
		{name: "changed while stopped, mtime restored", restart: true, keep: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := openTest(t, dir, 1<<30)
			u := &upstream{b: newBlob(1<<20, 50)}
			fillAndRead(t, c, u)
			if tt.restart {
				c.Close()
			}
			flipByte(t, c.contentPath(mustDigest(t, u.b.digest)), tt.keep)
			if tt.restart {
				c = openTest(t, dir, 1<<30)
			}
			if _, ok := c.Get(t.Context(), u.b.digest); ok {
				t.Fatal("a corrupt file was served")
			}
			if got := testutil.ToFloat64(c.m.corrupt); got != 1 {
				t.Errorf("snigate_cache_corrupt_total = %v, want 1", got)
			}
			if files := storedFiles(t, dir); len(files) != 0 {
				t.Errorf("files left: %v", files)
			}
			fillAndRead(t, c, u)
			if u.fetches.Load() != 2 {
				t.Errorf("%d fetches, want 2 (the fill, the refetch)", u.fetches.Load())
			}
		})
	}
}

// TestRestartServesVerified: after a restart the stored content is served
// again with its headers, no fetch, once it passed verification; 20
// concurrent first Gets all get it.
func TestRestartServesVerified(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, 1<<30)
	u := &upstream{b: newBlob(1<<20, 51)}
	fillAndRead(t, c, u)
	c.Close()

	c = openTest(t, dir, 1<<30)
	if s := c.Stats(); s.Entries != 1 || s.Bytes != int64(len(u.b.data)) {
		t.Fatalf("Stats after restart = %+v", s)
	}
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			e, ok := c.Get(t.Context(), u.b.digest)
			if !ok {
				errs[i] = errors.New("miss")
				return
			}
			if got := e.Header().Get("Docker-Content-Digest"); got != u.b.digest {
				errs[i] = errors.New("stored header lost: " + got)
			}
			data, err := readAll(e)
			if err == nil && !bytes.Equal(data, u.b.data) {
				err = errors.New("wrong bytes")
			}
			if err != nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Get %d: %v", i, err)
		}
	}
	if u.fetches.Load() != 1 {
		t.Errorf("%d fetches, want the first fill's only", u.fetches.Load())
	}
}

// TestMetadataCorruptRefetched: metadata that does not parse or names
// another size counts as corruption too.
func TestMetadataCorruptRefetched(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, 1<<30)
	u := &upstream{b: newBlob(1000, 52)}
	fillAndRead(t, c, u)
	c.Close()
	os.WriteFile(c.metaPath(mustDigest(t, u.b.digest)), []byte(`{"digest":"`+u.b.digest+`","size":1}`), 0o644)
	c = openTest(t, dir, 1<<30)
	if _, ok := c.Get(t.Context(), u.b.digest); ok {
		t.Fatal("served with metadata of another size")
	}
	if c.Stats().Corrupt != 1 {
		t.Errorf("Corrupt = %d, want 1", c.Stats().Corrupt)
	}
}
