package regcache

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// TestPinnedNeverEvicted: pinned content stays when max_size is smaller
// than everything stored (the least recently used unpinned content goes
// instead), and goes once unpinned. The bug: eviction took the least
// recently used content whatever it was, so a base image went first.
func TestPinnedNeverEvicted(t *testing.T) {
	a, b, n := &upstream{b: newBlob(1000, 31)}, &upstream{b: newBlob(1000, 32)}, &upstream{b: newBlob(1000, 33)}
	c := openTest(t, "", 2500)
	fillAndRead(t, c, a) // the oldest: evicted first unless pinned
	c.SetPinned([]string{a.b.digest})
	fillAndRead(t, c, b)
	fillAndRead(t, c, n) // over max_size: b goes, not a
	if !c.Holds(a.b.digest) || c.Holds(b.b.digest) || !c.Holds(n.b.digest) {
		t.Fatalf("holds a %v b %v n %v; want the pinned a and the newest n", c.Holds(a.b.digest), c.Holds(b.b.digest), c.Holds(n.b.digest))
	}
	c.SetMaxSize(1500) // pinned a and n do not fit: n goes
	if !c.Holds(a.b.digest) || c.Holds(n.b.digest) {
		t.Fatalf("after max_size 1500: holds a %v n %v; want a alone", c.Holds(a.b.digest), c.Holds(n.b.digest))
	}
	c.SetMaxSize(500) // a alone exceeds it: pinned, kept
	if !c.Holds(a.b.digest) {
		t.Fatal("pinned content evicted when it alone exceeds max_size")
	}
	c.SetPinned(nil)
	if c.Holds(a.b.digest) {
		t.Fatal("unpinned content over max_size kept")
	}
}

// TestPutVerifies: Put stores content that matches its digest and
// refuses bytes that do not, storing nothing.
func TestPutVerifies(t *testing.T) {
	c := openTest(t, "", 1<<20)
	b, other := newBlob(5000, 41), newBlob(5000, 42)
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	if err := c.Put(t.Context(), b.digest, h, int64(len(other.data)), bytes.NewReader(other.data)); err == nil || c.Holds(b.digest) {
		t.Fatalf("Put of wrong bytes: %v, held %v; want an error and nothing stored", err, c.Holds(b.digest))
	}
	if err := c.Put(t.Context(), b.digest, h, int64(len(b.data)), bytes.NewReader(b.data)); err != nil {
		t.Fatal(err)
	}
	e, ok := c.Get(t.Context(), b.digest)
	if !ok {
		t.Fatal("not stored")
	}
	got, _ := io.ReadAll(e)
	e.Close()
	if !bytes.Equal(got, b.data) {
		t.Fatal("stored bytes differ")
	}
}
