package regcache

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// BenchmarkOpen50000 measures the rebuild of an index of 50,000 stored
// digests at Open (names and stats only; the content is verified when
// first served), the start-up cost of a large cache.
func BenchmarkOpen50000(b *testing.B) {
	dir := b.TempDir()
	writeFakeEntries(b, dir, 50000)
	b.ResetTimer()
	for b.Loop() {
		c := openTest(b, dir, 1<<50)
		if n := c.Stats().Entries; n != 50000 {
			b.Fatalf("%d entries, want 50000", n)
		}
		c.Close()
	}
}

// writeFakeEntries writes n stored entries of 1KiB straight into dir's
// layout (their digests are not their content's: Open does not hash).
func writeFakeEntries(b *testing.B, dir string, n int) {
	data := make([]byte, 1024)
	for i := range n {
		hx := fmt.Sprintf("%064x", i)
		hx = hx[62:] + hx[:62] // spread over the prefix directories
		p := filepath.Join(dir, "sha256", hx[:2], hx)
		if i < 256 {
			os.MkdirAll(filepath.Dir(p), 0o750)
		}
		meta, _ := json.Marshal(metaFile{Digest: "sha256:" + hx, Size: int64(len(data))})
		if err := os.WriteFile(p, data, 0o640); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p+metaExt, meta, 0o640); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHit measures a hit: Get (open, fstat, index) and reading 8MiB
// of stored, verified content through the Entry, one stream and 8.
func BenchmarkHit(b *testing.B) {
	c := openTest(b, "", 1<<30)
	u := &upstream{b: newBlob(8<<20, 80)}
	e, err := c.Fill(b.Context(), u.b.digest, u.fetch)
	if err != nil {
		b.Fatal(err)
	}
	readAll(e)
	for _, streams := range []int{1, 8} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			b.SetBytes(int64(streams * len(u.b.data)))
			for b.Loop() {
				var wg sync.WaitGroup
				for range streams {
					wg.Go(func() { readHit(b, c, u.b.digest) })
				}
				wg.Wait()
			}
		})
	}
}

// readHit reads one stored digest to the end as a client would.
func readHit(b *testing.B, c *Cache, d string) {
	e, ok := c.Get(b.Context(), d)
	if !ok {
		b.Error("miss")
		return
	}
	defer e.Close()
	buf := make([]byte, 32<<10)
	if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{e}, buf); err != nil {
		b.Error(err)
	}
}
