package regauth

import (
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// MaxFileSize bounds a password file or docker config read into memory.
const MaxFileSize = 1 << 20

// fileStamp identifies one version of a file: a rename over it (the way
// Kubernetes updates a mounted Secret), a rewrite in place or a truncate
// changes at least one field.
type fileStamp struct {
	ino   uint64
	dev   uint64
	size  int64
	mtime time.Time
}

func stampOf(fi os.FileInfo) fileStamp {
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino, st.dev = sys.Ino, uint64(sys.Dev) //nolint:unconvert // Dev is int32 on some platforms
	}
	return st
}

// watchedFile re-parses a file when a stat(2) shows it changed, and
// otherwise hands out the last parse: one stat per use.
type watchedFile[T any] struct {
	path  string
	parse func([]byte) (T, error)

	mu    sync.Mutex
	stamp fileStamp
	val   T
	err   error
	ok    bool // val or err is the parse of stamp
}

// load returns the parse of the file's current content.
func (w *watchedFile[T]) load() (T, error) {
	var zero T
	fi, err := os.Stat(w.path)
	if err != nil {
		return zero, fmt.Errorf("stat %s: %w", w.path, err)
	}
	st := stampOf(fi)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ok && w.stamp == st {
		return w.val, w.err
	}
	b, err := readBounded(w.path)
	if err != nil {
		return zero, err
	}
	w.val, w.err = w.parse(b)
	if w.err != nil {
		w.err = fmt.Errorf("parse %s: %w", w.path, w.err)
	}
	w.stamp, w.ok = st, true
	return w.val, w.err
}

// readBounded reads path, refusing one larger than MaxFileSize.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, MaxFileSize)
	}
	return b, nil
}
