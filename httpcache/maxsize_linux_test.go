package httpcache

import (
	"bytes"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// chunkedBlobs answers HEAD and GET of its digests itself, the GET's
// body in flushed chunks of 32 KiB, calling before ahead of each one;
// without announce the GET has no Content-Length (a fill of unknown
// length).
type chunkedBlobs struct {
	blobs  map[string]chunkedBlob // by path
	before func()
	next   http.Handler
}

type chunkedBlob struct {
	digest   string
	body     []byte
	announce bool
}

func (c *chunkedBlobs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, ok := c.blobs[r.URL.Path]
	if !ok {
		c.next.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Docker-Content-Digest", b.digest)
	if b.announce || r.Method == http.MethodHead {
		h.Set("Content-Length", strconv.Itoa(len(b.body)))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodGet {
		return
	}
	for off := 0; off < len(b.body); off += 32 << 10 {
		c.before()
		if _, err := w.Write(b.body[off:min(off+32<<10, len(b.body))]); err != nil {
			return
		}
		http.NewResponseController(w).Flush()
	}
}

// contentOnDisk is what the store's content files under dir take (their
// allocated blocks, or their length if larger), and their number, as
// the store held them at one moment. One walk is no snapshot: a file it
// counted may be evicted, and another reserved further on, before it
// ends, and the two would be counted together though the store never
// held them at once. So the directory is walked twice and only the files
// found both times count, each at the smaller of its two sizes: all of
// them were there together when the first walk passed the last of them
// (a name is not removed and made again in between: content is stored
// once per digest).
func contentOnDisk(dir string) (used int64, files int) {
	first, second := walkContent(dir), walkContent(dir)
	for p, n := range first {
		if m, ok := second[p]; ok {
			used += min(n, m)
			files++
		}
	}
	return used, files
}

// walkContent is what each content file under dir takes, by path.
func walkContent(dir string) map[string]int64 {
	sizes := map[string]int64{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || d.Name() == "lock" || strings.HasSuffix(d.Name(), ".meta") {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			sizes[p] = max(fi.Size(), fi.Sys().(*syscall.Stat_t).Blocks*512)
		}
		return nil
	})
	return sizes
}

// TestFillsBeyondMaxSizeServedUncached: a store of max_size 1 MiB, six
// 384 KiB blobs and one 3 MiB blob of unknown length, each pulled by two
// nodes (h2, HTTP/1.1) at once: every node gets the exact bytes, and the
// store's files never take more than max_size (sampled before every chunk
// the registry sends; a filesystem block per file of slack). The bug:
// fills in flight were all written to disk, however many, and one of
// unknown length was not counted at all.
func TestFillsBeyondMaxSizeServedUncached(t *testing.T) {
	const maxSize = 1 << 20
	w := newWorld(t, worldOpts{maxSize: maxSize})
	var mu sync.Mutex
	worst, worstFiles := int64(0), 0
	src := &chunkedBlobs{blobs: map[string]chunkedBlob{}, next: w.up.reg, before: func() {
		used, files := contentOnDisk(w.dir)
		mu.Lock()
		defer mu.Unlock()
		if used-int64(files)*4096 > worst-int64(worstFiles)*4096 {
			worst, worstFiles = used, files
		}
	}}
	var paths []string
	for i := range 7 {
		size, announce := 384<<10, i < 6
		if !announce {
			size = 3 << 20
		}
		body := randomBytes(t, size)
		d := digestOf(body)
		src.blobs[blobPath(d)] = chunkedBlob{digest: d, body: body, announce: announce}
		paths = append(paths, blobPath(d))
	}
	w.up.set(func(f *fakeRegistry) { f.reg = src })
	var wg sync.WaitGroup
	for _, p := range paths {
		for _, proto := range []string{"h2", "http/1.1"} {
			c := w.node(t, proto)
			wg.Go(func() {
				status, body, _, err := get(c, p)
				if want := src.blobs[p].body; err != nil || status != http.StatusOK || !bytes.Equal(body, want) {
					t.Errorf("%s %s: status %d, %d bytes, err %v; want the %d bytes", proto, p, status, len(body), err, len(want))
				}
			})
		}
	}
	wg.Wait()
	src.before()
	if worst > maxSize+int64(worstFiles)*4096 {
		t.Errorf("the store's files took %d bytes (%d files), max_size is %d", worst, worstFiles, maxSize)
	}
	if s := w.store.Stats(); s.Bytes > maxSize {
		t.Errorf("stats %+v: more stored than max_size", s)
	}
}
