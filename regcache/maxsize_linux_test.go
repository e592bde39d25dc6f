package regcache

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// diskUsage is the disk the cache's content files take under dir (the
// allocated blocks, fallocate's included, or the length if larger), and
// their number; the lock and metadata files are not content.
func diskUsage(t *testing.T, dir string) (used int64, files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || d.Name() == lockName || strings.HasSuffix(d.Name(), metaExt) {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		used += max(fi.Size(), fi.Sys().(*syscall.Stat_t).Blocks*512)
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return used, files
}

// TestFillsStayWithinMaxSize: concurrent fills of known size (384 KiB
// each, with two readers each) and a fill of unknown length (3 MiB)
// in a cache of max_size 1 MiB: the cache's files never take more than
// max_size (sampled after every chunk the upstreams send; a filesystem
// block per file of slack), every reader gets the exact bytes with one
// fetch per digest, and a caller arriving once the unknown fill outgrew
// max_size and dropped bytes from memory is told to bypass. The bug: fills in flight were written whole
// to tmp/ however many there were (60 MB on disk for a 16 MiB cache) and
// a fill of unknown length was not counted at all (110 MB).
func TestFillsStayWithinMaxSize(t *testing.T) {
	tests := []struct {
		name    string
		known   int  // fills of known size
		unknown bool // and one of unknown length
	}{
		{name: "ten of known size", known: 10},
		{name: "one of unknown length", unknown: true},
		{name: "ten and one", known: 10, unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { fillsWithinMaxSize(t, tt.known, tt.unknown) })
	}
}

// limitSource is one upstream of fillsWithinMaxSize and the pipe that
// feeds its body.
type limitSource struct {
	u  *upstream
	pw *io.PipeWriter
}

func newLimitSource(t *testing.T, n int, size int64, seed uint64) limitSource {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	u := &upstream{b: newBlob(n, seed), size: size, before: make(chan struct{}),
		body: func() io.ReadCloser { return pr }}
	return limitSource{u: u, pw: pw}
}

func fillsWithinMaxSize(t *testing.T, known int, unknown bool) {
	const maxSize, knownSize, unknownSize, chunk = 1 << 20, 384 << 10, 3 << 20, 32 << 10
	dir := t.TempDir()
	c := openTest(t, dir, maxSize)
	joined, onJoin := signals(64)
	c.hooks = hooks{joined: onJoin}
	var sources []limitSource
	for i := range known {
		sources = append(sources, newLimitSource(t, knownSize, 0, uint64(100+i)))
	}
	if unknown {
		sources = append(sources, newLimitSource(t, unknownSize, -1, 99))
	}
	var wg sync.WaitGroup
	readers := make([]reader, 2*len(sources))
	for i, s := range sources {
		startReader(t, c, s.u, &wg, &readers[2*i])
		startReader(t, c, s.u, &wg, &readers[2*i+1])
	}
	waitN(t, joined, len(readers), "readers joined")
	check := func(when string) {
		if used, files := diskUsage(t, dir); used > maxSize+int64(files)*4096 {
			t.Fatalf("%s: the cache's files take %d bytes (%d files), max_size is %d", when, used, files, maxSize)
		}
	}
	for _, s := range sources {
		close(s.u.before)
	}
	for off := 0; off < unknownSize; off += chunk {
		for i, s := range sources {
			if off < len(s.u.b.data) {
				if _, err := s.pw.Write(s.u.b.data[off:min(off+chunk, len(s.u.b.data))]); err != nil {
					t.Fatalf("upstream %d at %d: %v", i, off, err)
				}
				check("filling")
			}
		}
		if last := sources[len(sources)-1]; unknown && off == maxSize+SpillWindow+2*chunk {
			// the unknown one has outgrown max_size and its window (its
			// write of off-chunk is done): a new reader cannot have its bytes
			if _, err := c.Fill(t.Context(), last.u.b.digest, last.u.fetch); !errors.Is(err, ErrBypass) {
				t.Errorf("Fill of a fill in flight that outgrew max_size: %v, want ErrBypass", err)
			}
		}
	}
	for _, s := range sources {
		s.pw.Close()
	}
	wg.Wait()
	check("filled")
	wantWholeFromOneFetch(t, readers, sources)
	if st := c.Stats(); st.Bytes > maxSize || st.Entries > maxSize/knownSize {
		t.Errorf("Stats %+v: more stored than max_size holds", st)
	}
}

// wantWholeFromOneFetch: readers[2i] and readers[2i+1] got the whole blob
// of sources[i], which its upstream sent once.
func wantWholeFromOneFetch(t *testing.T, readers []reader, sources []limitSource) {
	t.Helper()
	for i, r := range readers {
		if want := sources[i/2].u.b.data; r.err != nil || !bytes.Equal(r.data, want) {
			t.Errorf("reader %d: %d bytes, err %v; want the blob's %d bytes", i, len(r.data), r.err, len(want))
		}
	}
	for i, s := range sources {
		if n := s.u.fetches.Load(); n != 1 {
			t.Errorf("upstream %d fetched %d times, want 1", i, n)
		}
	}
}
