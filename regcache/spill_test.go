package regcache

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// spillLimit bounds the waits of the spill tests: a failure deadline,
// never a synchronisation delay.
const spillLimit = 10 * time.Second

// openSpill opens a cache of max_size 64 KiB, whose fills of the blobs
// here (three windows long) all spill.
func openSpill(t *testing.T, idle time.Duration) *Cache {
	t.Helper()
	c, err := Open(Config{Route: "registry", Dir: t.TempDir(), MaxSize: 64 << 10, FillIdleTimeout: idle,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// spillBlob is a blob three SpillWindows long, fed through a pipe; its
// fetch answers once before is closed (callers join a fill that spilled
// only before its answer).
func spillBlob(t *testing.T, seed uint64) (*upstream, *io.PipeWriter) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	return &upstream{b: newBlob(3*SpillWindow, seed), before: make(chan struct{}),
		body: func() io.ReadCloser { return pr }}, pw
}

// fillEntries joins n callers to u's fill before its fetch answers and
// returns their Entries; stored, when set, is the fill's end hook.
func fillEntries(t *testing.T, c *Cache, u *upstream, n int, stored func(string)) []*Entry {
	t.Helper()
	joined, onJoin := signals(n)
	c.hooks = hooks{joined: onJoin, stored: stored}
	type got struct {
		e   *Entry
		err error
	}
	ch := make(chan got, n)
	for range n {
		go func() {
			e, err := c.Fill(t.Context(), u.b.digest, u.fetch)
			ch <- got{e, err}
		}()
	}
	for i := range n {
		select {
		case <-joined:
		case <-time.After(spillLimit):
			t.Fatalf("%d of %d callers joined", i, n)
		}
	}
	close(u.before)
	var out []*Entry
	for range n {
		g := <-ch
		if g.err != nil {
			t.Fatalf("Fill: %v", g.err)
		}
		t.Cleanup(func() { g.e.Close() })
		out = append(out, g.e)
	}
	return out
}

// result waits for a reader's outcome, or fails the test at spillLimit.
func result(t *testing.T, ch <-chan reader, what string) reader {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(spillLimit):
		t.Fatalf("%s: no result in %s", what, spillLimit)
		return reader{}
	}
}

// TestSpilledFillServesReaderAhead: of a fill that does not fit in
// max_size, a reader that seeks far ahead (a range near the end) and one
// that reads from the start both get their bytes: the window follows
// the offsets readers read from, not where they joined (a reader ahead
// held it at 0 and the fill stalled).
func TestSpilledFillServesReaderAhead(t *testing.T) {
	c := openSpill(t, -1)
	u, pw := spillBlob(t, 40)
	from := int64(len(u.b.data) - 1000)
	es := fillEntries(t, c, u, 2, nil)
	ahead, whole := make(chan reader, 1), make(chan reader, 1)
	read := func(e *Entry, off int64, out chan<- reader) {
		if _, err := e.Seek(off, io.SeekStart); err != nil {
			out <- reader{err: err}
			return
		}
		data, err := readAll(e)
		out <- reader{data: data, err: err}
	}
	go read(es[0], from, ahead)
	go read(es[1], 0, whole)
	go func() { pw.Write(u.b.data); pw.Close() }()
	if r := result(t, ahead, "reader ahead"); r.err != nil || !bytes.Equal(r.data, u.b.data[from:]) {
		t.Errorf("reader ahead: %d bytes, err %v; want the last %d", len(r.data), r.err, len(u.b.data)-int(from))
	}
	if r := result(t, whole, "reader from the start"); r.err != nil || !bytes.Equal(r.data, u.b.data) {
		t.Errorf("reader from the start: %d bytes, err %v; want the blob's %d", len(r.data), r.err, len(u.b.data))
	}
	if _, ok := c.Get(t.Context(), u.b.digest); ok {
		t.Error("content larger than max_size was stored")
	}
}

// TestSpilledFillDropsStalledReader: a reader of a fill that does not
// fit in max_size that takes no byte for FillIdleTimeout is dropped (its
// read fails), and the reader that keeps up gets every byte: one stalled
// node does not stall the others' download.
func TestSpilledFillDropsStalledReader(t *testing.T) {
	c := openSpill(t, 100*time.Millisecond)
	u, _ := spillBlob(t, 41)
	// The whole blob at once, not through a pipe whose writer a busy
	// machine may leave unscheduled for FillIdleTimeout: only the
	// stalled reader is idle, never the upstream.
	u.body = nil
	es := fillEntries(t, c, u, 2, nil)
	stalled, e := es[0], es[1]
	got, err := readAll(e)
	if err != nil || !bytes.Equal(got, u.b.data) {
		t.Fatalf("reader that keeps up: %d bytes, err %v; want the blob's %d", len(got), err, len(u.b.data))
	}
	if _, err := stalled.Read(make([]byte, 10)); !errors.Is(err, ErrFillFailed) {
		t.Errorf("read of the stalled reader: %v, want ErrFillFailed", err)
	}
}

// TestSpilledFillStopsWithoutReaders: a fill that does not fit in
// max_size stops reading the upstream once its last reader went away
// (nobody can join it, nothing is stored).
func TestSpilledFillStopsWithoutReaders(t *testing.T) {
	c := openSpill(t, -1)
	u, pw := spillBlob(t, 42)
	stored, onStore := signals(1)
	e := fillEntries(t, c, u, 1, onStore)[0]
	if _, err := pw.Write(u.b.data[:1000]); err != nil {
		t.Fatal(err)
	}
	e.Close()
	_, err := pw.Write(u.b.data[1000:])
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("upstream write after the last reader left: %v, want the body closed", err)
	}
	awaitSignal(t, stored, "the fill's end")
	if s := c.Stats(); s.Fills != 0 || s.Entries != 0 {
		t.Errorf("Stats %+v, want no fill and nothing stored", s)
	}
}

// TestSpillsBeyondMaxSpillsBypass: MaxSpills fills that do not fit in
// max_size are served from memory at once; one more is not filled, its
// caller told to bypass (each spill holds up to SpillWindow of memory, so
// their number is what bounds it). When one ends, the next spills again.
func TestSpillsBeyondMaxSpillsBypass(t *testing.T) {
	c, err := Open(Config{Route: "registry", Dir: t.TempDir(), MaxSize: 1 << 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	stored, onStore := signals(MaxSpills + 2)
	c.hooks = hooks{stored: onStore}
	var entries []*Entry
	var writers []*io.PipeWriter
	for i := range MaxSpills {
		pr, pw := io.Pipe()
		t.Cleanup(func() { pw.Close() })
		u := &upstream{b: newBlob(2<<10, uint64(200+i)), body: func() io.ReadCloser { return pr }}
		e, err := c.Fill(t.Context(), u.b.digest, u.fetch)
		if err != nil {
			t.Fatalf("spill %d: %v", i, err)
		}
		t.Cleanup(func() { e.Close() })
		entries, writers = append(entries, e), append(writers, pw)
	}
	one := &upstream{b: newBlob(2<<10, 300)}
	if _, err := c.Fill(t.Context(), one.b.digest, one.fetch); !errors.Is(err, ErrBypass) {
		t.Fatalf("fill beyond MaxSpills spills: %v, want ErrBypass", err)
	}
	awaitSignal(t, stored, "the end of the fill beyond MaxSpills")
	writers[0].Close()
	if _, err := readAll(entries[0]); err == nil {
		t.Fatal("a spilled fill cut short read to its end")
	}
	awaitSignal(t, stored, "the end of the first spill") // a slot is free
	fillAndRead(t, c, one)
}

// awaitSignal receives one signal from ch, or fails the test at spillLimit.
func awaitSignal(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(spillLimit):
		t.Fatalf("%s: not in %s", what, spillLimit)
	}
}

// TestSpilledFillJoinedUntilItDropsBytes: a caller of a digest whose fill
// does not fit in max_size joins it while its window still holds every
// byte it received (one fetch for the nodes that ask at the same moment),
// and is told to bypass once the fill dropped bytes it could not have.
func TestSpilledFillJoinedUntilItDropsBytes(t *testing.T) {
	c := openSpill(t, -1)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	u := &upstream{b: newBlob(3*SpillWindow, 43), body: func() io.ReadCloser { return pr }}
	first, err := c.Fill(t.Context(), u.b.digest, u.fetch) // answered: the fill has spilled
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Fill(t.Context(), u.b.digest, u.fetch)
	if err != nil {
		t.Fatalf("Fill of a spilled fill that dropped nothing: %v, want it joined", err)
	}
	got := make(chan reader, 2)
	for _, e := range []*Entry{first, second} {
		go func() {
			data, err := readAll(e)
			got <- reader{data: data, err: err}
		}()
	}
	if _, err := pw.Write(u.b.data); err != nil { // read by the fill: at most a window is left
		t.Fatal(err)
	}
	if _, err := c.Fill(t.Context(), u.b.digest, u.fetch); !errors.Is(err, ErrBypass) {
		t.Errorf("Fill of a spilled fill that dropped bytes: %v, want ErrBypass", err)
	}
	pw.Close()
	for i := range 2 {
		if r := result(t, got, "reader"); r.err != nil || !bytes.Equal(r.data, u.b.data) {
			t.Errorf("reader %d: %d bytes, err %v; want the blob's %d", i, len(r.data), r.err, len(u.b.data))
		}
	}
	if n := u.fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}
