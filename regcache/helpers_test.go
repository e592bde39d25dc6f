package regcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// blob is test content and its digest.
type blob struct {
	data   []byte
	digest string
}

func newBlob(size int, seed uint64) blob {
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	return blob{data: data, digest: fmt.Sprintf("sha256:%x", sha256.Sum256(data))}
}

// openTest opens a cache in dir (a new temporary directory when empty),
// closed at the end of the test.
func openTest(t testing.TB, dir string, maxSize int64) *Cache {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	c, err := Open(Config{Route: "registry", Dir: dir, MaxSize: maxSize,
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// upstream is a fake registry for one blob: it counts its fetches and
// serves the blob, all at once or through the body the test gives it.
type upstream struct {
	b       blob
	fetches atomic.Int32
	body    func() io.ReadCloser // nil: the whole blob
	size    int64                // announced; 0: len(blob)
	before  chan struct{}        // non-nil: each fetch waits for it to close
}

func (u *upstream) fetch(ctx context.Context) (Fetched, error) {
	u.fetches.Add(1)
	if u.before != nil {
		select {
		case <-u.before:
		case <-ctx.Done():
			return Fetched{}, ctx.Err()
		}
	}
	body := io.NopCloser(bytes.NewReader(u.b.data))
	if u.body != nil {
		body = u.body()
	}
	size := u.size
	if size == 0 {
		size = int64(len(u.b.data))
	}
	h := http.Header{"Content-Type": {"application/octet-stream"}, "Docker-Content-Digest": {u.b.digest}}
	return Fetched{Body: body, Header: h, Size: size}, nil
}

// readAll reads e to its end and closes it.
func readAll(e *Entry) ([]byte, error) {
	defer e.Close()
	return io.ReadAll(e)
}

// fillAndRead fills b through u and checks the bytes read.
func fillAndRead(t *testing.T, c *Cache, u *upstream) {
	t.Helper()
	e, err := c.Fill(t.Context(), u.b.digest, u.fetch)
	if err != nil {
		t.Fatalf("Fill: %v", err)
	}
	got, err := readAll(e)
	if err != nil || !bytes.Equal(got, u.b.data) {
		t.Fatalf("read %d bytes, err %v; want the blob's %d bytes", len(got), err, len(u.b.data))
	}
}

// filesIn lists the regular files under dir, relative to it.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// storedFiles lists the files of stored content: everything but the lock.
func storedFiles(t *testing.T, dir string) []string {
	var out []string
	for _, f := range filesIn(t, dir) {
		if f != lockName {
			out = append(out, f)
		}
	}
	return out
}

// signals counts calls of a hook on a channel.
func signals(n int) (chan string, func(string)) {
	ch := make(chan string, n)
	return ch, func(d string) { ch <- d }
}

func waitN(t *testing.T, ch <-chan string, n int, what string) {
	t.Helper()
	for i := range n {
		select {
		case <-ch:
		case <-t.Context().Done():
			t.Fatalf("%s: %d of %d", what, i, n)
		}
	}
}
