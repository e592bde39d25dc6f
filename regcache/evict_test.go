package regcache

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// TestEvictWhileReading: content evicted while a reader streams it (its
// file removed) is still read to the end, byte for byte, by that reader.
func TestEvictWhileReading(t *testing.T) {
	a, b := &upstream{b: newBlob(1<<20, 20)}, &upstream{b: newBlob(1<<20, 21)}
	c := openTest(t, "", 3<<19) // room for one and a half
	fillAndRead(t, c, a)
	e, ok := c.Get(t.Context(), a.b.digest)
	if !ok {
		t.Fatal("a: not stored")
	}
	defer e.Close()
	head := make([]byte, 1000)
	if _, err := io.ReadFull(e, head); err != nil {
		t.Fatal(err)
	}
	fillAndRead(t, c, b) // evicts a
	if _, err := os.Stat(c.contentPath(mustDigest(t, a.b.digest))); !os.IsNotExist(err) {
		t.Fatalf("a's file after the eviction: %v, want it gone", err)
	}
	if _, ok := c.Get(t.Context(), a.b.digest); ok {
		t.Fatal("a is still served after its eviction")
	}
	rest, err := io.ReadAll(e)
	if err != nil || !bytes.Equal(append(head, rest...), a.b.data) {
		t.Fatalf("the reader of the evicted file: %d bytes, %v; want all %d", len(head)+len(rest), err, len(a.b.data))
	}
	if s := c.Stats(); s.Entries != 1 || s.Bytes != int64(len(b.b.data)) || s.EvictedBytes != int64(len(a.b.data)) {
		t.Fatalf("Stats = %+v, want b alone, a's size evicted", s)
	}
}

// TestEvictLeastRecentlyUsed: a Get makes content recent, so the content
// not asked for since is the one removed.
func TestEvictLeastRecentlyUsed(t *testing.T) {
	a, b, n := &upstream{b: newBlob(1000, 22)}, &upstream{b: newBlob(1000, 23)}, &upstream{b: newBlob(1000, 24)}
	c := openTest(t, "", 2500)
	fillAndRead(t, c, a)
	fillAndRead(t, c, b)
	e, ok := c.Get(t.Context(), a.b.digest)
	if !ok {
		t.Fatal("a: not stored")
	}
	e.Close()
	fillAndRead(t, c, n)
	for _, tt := range []struct {
		name string
		u    *upstream
		want bool
	}{{"a (used)", a, true}, {"b (not used since)", b, false}, {"new", n, true}} {
		e, ok := c.Get(t.Context(), tt.u.b.digest)
		if ok {
			e.Close()
		}
		if ok != tt.want {
			t.Errorf("%s: stored %v, want %v", tt.name, ok, tt.want)
		}
	}
}

// TestLargerThanMaxSizeServedNotStored: content larger than max_size is
// served to its readers and not kept, and stored content stays.
func TestLargerThanMaxSizeServedNotStored(t *testing.T) {
	small, big := &upstream{b: newBlob(100, 25)}, &upstream{b: newBlob(5000, 26)}
	c := openTest(t, "", 1000)
	fillAndRead(t, c, small)
	fillAndRead(t, c, big)
	if _, ok := c.Get(t.Context(), big.b.digest); ok {
		t.Error("content larger than max_size was stored")
	}
	e, ok := c.Get(t.Context(), small.b.digest)
	if !ok {
		t.Fatal("the small blob was evicted for content that was not going to be kept")
	}
	e.Close()
}

// TestSetMaxSizeEvicts: lowering max_size on reload removes content at once.
func TestSetMaxSizeEvicts(t *testing.T) {
	c := openTest(t, "", 1<<20)
	for i := range 4 {
		fillAndRead(t, c, &upstream{b: newBlob(1000, uint64(30+i))})
	}
	c.SetMaxSize(2000)
	if s := c.Stats(); s.Entries != 2 || s.Bytes != 2000 || s.MaxSize != 2000 {
		t.Fatalf("Stats = %+v, want 2 entries, 2000 bytes", s)
	}
}

// TestPurge: Purge removes one digest, PurgeAll the rest; a purged fill in
// flight is served but not stored.
func TestPurge(t *testing.T) {
	c := openTest(t, "", 1<<20)
	a, b := &upstream{b: newBlob(1000, 40)}, &upstream{b: newBlob(1000, 41)}
	fillAndRead(t, c, a)
	fillAndRead(t, c, b)
	if found, err := c.Purge(a.b.digest); !found || err != nil {
		t.Fatalf("Purge(a) = %v, %v", found, err)
	}
	if found, _ := c.Purge(a.b.digest); found {
		t.Error("Purge(a) again found something")
	}
	if _, ok := c.Get(t.Context(), a.b.digest); ok {
		t.Error("a is served after Purge")
	}
	if n, bytes, err := c.PurgeAll(); n != 1 || bytes != 1000 || err != nil {
		t.Errorf("PurgeAll = %d, %d, %v; want b's 1 entry, 1000 bytes", n, bytes, err)
	}

	pr, pw := io.Pipe()
	f := &upstream{b: newBlob(1000, 42), body: func() io.ReadCloser { return pr }}
	e, err := c.Fill(t.Context(), f.b.digest, f.fetch)
	if err != nil {
		t.Fatal(err)
	}
	if found, _ := c.Purge(f.b.digest); !found {
		t.Error("Purge of a fill in flight found nothing")
	}
	go func() { pw.Write(f.b.data); pw.Close() }()
	if got, err := readAll(e); err != nil || !bytes.Equal(got, f.b.data) {
		t.Fatalf("the purged fill's reader: %d bytes, %v", len(got), err)
	}
	if _, ok := c.Get(t.Context(), f.b.digest); ok {
		t.Error("a fill purged in flight was stored")
	}
	if files := storedFiles(t, c.Dir()); len(files) != 0 {
		t.Errorf("files left after PurgeAll: %v", files)
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
