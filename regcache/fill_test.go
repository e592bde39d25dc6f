package regcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
)

// reader is one concurrent client of a digest: what it read and how.
type reader struct {
	data   []byte
	err    error
	stored bool
}

func startReader(t *testing.T, c *Cache, u *upstream, wg *sync.WaitGroup, out *reader) {
	wg.Go(func() {
		e, err := c.Fill(t.Context(), u.b.digest, u.fetch)
		if err != nil {
			out.err = err
			return
		}
		out.stored = e.Stored()
		out.data, out.err = readAll(e)
	})
}

// TestFillFiftyReadersOneFetch: 50 readers of one digest, joining before
// the upstream's first byte, half-way through the fill and after it was
// stored, all read exactly the blob, and the upstream is asked once.
func TestFillFiftyReadersOneFetch(t *testing.T) {
	c := openTest(t, "", 1<<30)
	joined, onJoin := signals(100)
	stored, onStore := signals(1)
	c.hooks = hooks{joined: onJoin, stored: onStore}
	b := newBlob(3<<20, 1)
	pr, pw := io.Pipe()
	u := &upstream{b: b, before: make(chan struct{}), body: func() io.ReadCloser { return pr }}

	readers := make([]reader, 50)
	var wg sync.WaitGroup
	for i := range 20 { // before the first byte: the fetch has not even answered
		startReader(t, c, u, &wg, &readers[i])
	}
	waitN(t, joined, 20, "readers joined before the first byte")
	close(u.before)
	half := len(b.data) / 2
	if _, err := pw.Write(b.data[:half]); err != nil {
		t.Fatal(err)
	}
	probe, err := c.Fill(t.Context(), b.digest, u.fetch)
	if err != nil {
		t.Fatal(err)
	}
	waitN(t, joined, 1, "the probe joined")
	if _, err := probe.ReadAt(make([]byte, half), 0); err != nil { // returns once half is on disk
		t.Fatal(err)
	}
	probe.Close()
	for i := 20; i < 40; i++ { // mid-way
		startReader(t, c, u, &wg, &readers[i])
	}
	waitN(t, joined, 20, "readers joined mid-way")
	if _, err := pw.Write(b.data[half:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	waitN(t, stored, 1, "the fill stored")
	for i := 40; i < 50; i++ { // after completion: hits
		startReader(t, c, u, &wg, &readers[i])
	}
	wg.Wait()

	for i, r := range readers {
		if r.err != nil || !bytes.Equal(r.data, b.data) {
			t.Errorf("reader %d: %d bytes, err %v; want the blob's %d bytes", i, len(r.data), r.err, len(b.data))
		}
		if wantStored := i >= 40; r.stored != wantStored {
			t.Errorf("reader %d: Stored() = %v, want %v", i, r.stored, wantStored)
		}
	}
	if n := u.fetches.Load(); n != 1 {
		t.Errorf("upstream fetched %d times, want once", n)
	}
	if s := c.Stats(); s.Entries != 1 || s.Bytes != int64(len(b.data)) || s.UpstreamBytes != int64(len(b.data)) {
		t.Errorf("Stats = %+v, want 1 entry of %d bytes, that many fetched", s, len(b.data))
	}
}

// brokenBody sends data, then fails with err (io.EOF: ends cleanly).
type brokenBody struct {
	r   io.Reader
	err error
}

func (b *brokenBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, b.err
	}
	return n, err
}

func (b *brokenBody) Close() error { return nil }

// TestFillFailureFailsEveryReader: whatever breaks a fill, every reader
// (including those that already have every byte the upstream sent) gets
// an error, never a clean end, and nothing is stored; the next Fill asks
// the upstream again.
func TestFillFailureFailsEveryReader(t *testing.T) {
	b := newBlob(1<<20, 2)
	wrong := bytes.Clone(b.data)
	wrong[len(wrong)/2] ^= 1
	tests := []struct {
		name string
		body []byte
		err  error // the body's error after its bytes
		size int64 // announced; 0: the blob's
		want error
	}{
		{name: "connection reset mid-fill", body: b.data[:len(b.data)/2], err: errors.New("connection reset by peer"), want: ErrFillFailed},
		{name: "body shorter than announced", body: b.data[:len(b.data)-1], err: io.EOF, want: ErrDigestMismatch},
		{name: "one byte wrong", body: wrong, err: io.EOF, want: ErrDigestMismatch},
		{name: "wrong bytes, length unknown", body: wrong, err: io.EOF, size: -1, want: ErrDigestMismatch},
		{name: "longer than announced", body: append(bytes.Clone(b.data), 0), err: io.EOF, size: -1, want: ErrDigestMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openTest(t, "", 1<<30)
			joined, onJoin := signals(10)
			ended, onEnd := signals(1)
			c.hooks = hooks{joined: onJoin, stored: onEnd}
			u := &upstream{b: b, size: tt.size, before: make(chan struct{}), body: func() io.ReadCloser {
				return &brokenBody{r: bytes.NewReader(tt.body), err: tt.err}
			}}
			readers := make([]reader, 10)
			var wg sync.WaitGroup
			for i := range readers {
				startReader(t, c, u, &wg, &readers[i])
			}
			waitN(t, joined, len(readers), "readers joined")
			close(u.before)
			wg.Wait()
			waitN(t, ended, 1, "the fill ended")
			for i, r := range readers {
				if !errors.Is(r.err, tt.want) || !errors.Is(r.err, ErrFillFailed) {
					t.Errorf("reader %d: %d bytes, err %v; want an error matching %v", i, len(r.data), r.err, tt.want)
				}
			}
			if files := storedFiles(t, c.Dir()); len(files) != 0 {
				t.Errorf("files left: %v", files)
			}
			if _, ok := c.Get(t.Context(), b.digest); ok {
				t.Error("Get after a failed fill: a hit")
			}
			u.body, u.size = nil, 0
			fillAndRead(t, c, u)
			if n := u.fetches.Load(); n != 2 {
				t.Errorf("upstream fetched %d times, want 2 (the failed fill, the retry)", n)
			}
		})
	}
}

// fetchError is an upstream's refusal, as the bridge would report it.
type fetchError struct{ status int }

func (e *fetchError) Error() string { return fmt.Sprintf("upstream answered %d", e.status) }

// TestFillFetchErrorReachesCaller: the fetch's own error comes back
// wrapped, so that the bridge can relay the registry's answer (errors.As).
func TestFillFetchErrorReachesCaller(t *testing.T) {
	c := openTest(t, "", 1<<30)
	b := newBlob(10, 3)
	_, err := c.Fill(t.Context(), b.digest, func(context.Context) (Fetched, error) {
		return Fetched{}, &fetchError{status: 404}
	})
	var fe *fetchError
	if !errors.As(err, &fe) || fe.status != 404 || !errors.Is(err, ErrFillFailed) || errors.Is(err, ErrBypass) {
		t.Fatalf("Fill error = %v, want the fetch's 404, matching ErrFillFailed and not ErrBypass", err)
	}
	if files := storedFiles(t, c.Dir()); len(files) != 0 {
		t.Errorf("files left: %v", files)
	}
}

// TestFillBadDigestBypasses: a digest the cache cannot address is
// served from upstream, without a fetch by the cache.
func TestFillBadDigestBypasses(t *testing.T) {
	c := openTest(t, "", 1<<30)
	u := &upstream{b: blob{digest: "sha384:abc"}}
	_, err := c.Fill(t.Context(), u.b.digest, u.fetch)
	if !errors.Is(err, ErrBypass) || !errors.Is(err, ErrBadDigest) || u.fetches.Load() != 0 {
		t.Fatalf("Fill error = %v after %d fetches, want ErrBypass and ErrBadDigest, no fetch", err, u.fetches.Load())
	}
}

// TestFillRangeWhileFilling: ReadAt beyond what has arrived waits for it;
// Seek and Read serve a range from the middle (containerd's resume).
func TestFillRangeWhileFilling(t *testing.T) {
	c := openTest(t, "", 1<<30)
	b := newBlob(1<<20, 4)
	pr, pw := io.Pipe()
	u := &upstream{b: b, body: func() io.ReadCloser { return pr }}
	e, err := c.Fill(t.Context(), b.digest, u.fetch)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Size() != int64(len(b.data)) {
		t.Fatalf("Size = %d, want %d", e.Size(), len(b.data))
	}
	go func() {
		pw.Write(b.data)
		pw.Close()
	}()
	off := int64(len(b.data) - 1000)
	got := make([]byte, 500)
	if _, err := e.ReadAt(got, off); err != nil || !bytes.Equal(got, b.data[off:off+500]) {
		t.Fatalf("ReadAt near the end: err %v, bytes right: %v", err, bytes.Equal(got, b.data[off:off+500]))
	}
	if _, err := e.Seek(-10, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	tail, err := io.ReadAll(e)
	if err != nil || !bytes.Equal(tail, b.data[len(b.data)-10:]) {
		t.Fatalf("the last 10 bytes: %x, %v", tail, err)
	}
}

// TestEntryCloseWakesReader: a reader waiting for a fill's next byte
// returns when its Entry is closed (the client went away).
func TestEntryCloseWakesReader(t *testing.T) {
	c := openTest(t, "", 1<<30)
	b := newBlob(1000, 5)
	pr, pw := io.Pipe()
	defer pw.Close()
	u := &upstream{b: b, body: func() io.ReadCloser { return pr }}
	e, err := c.Fill(t.Context(), b.digest, u.fetch)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := e.Read(make([]byte, 10))
		done <- err
	}()
	e.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v, want ErrClosed", err)
	}
}

// TestFillSizes: content of unknown length (Size -1 until the end) and
// empty content are filled, stored and served like any other.
func TestFillSizes(t *testing.T) {
	tests := []struct {
		name string
		b    blob
		size int64
	}{
		{name: "unknown length", b: newBlob(100<<10, 6), size: -1},
		{name: "empty", b: newBlob(0, 0), size: 0},
		{name: "one byte", b: newBlob(1, 6), size: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openTest(t, "", 1<<30)
			pr, pw := io.Pipe()
			u := &upstream{b: tt.b, size: tt.size, body: func() io.ReadCloser { return pr }}
			e, err := c.Fill(t.Context(), tt.b.digest, u.fetch)
			if err != nil {
				t.Fatal(err)
			}
			if want := max(tt.size, -1); tt.size != 0 && e.Size() != want {
				t.Errorf("Size while filling = %d, want %d", e.Size(), want)
			}
			go func() { pw.Write(tt.b.data); pw.Close() }()
			if got, err := readAll(e); err != nil || !bytes.Equal(got, tt.b.data) {
				t.Fatalf("read %d bytes, %v", len(got), err)
			}
			hit, ok := c.Get(t.Context(), tt.b.digest)
			if !ok {
				t.Fatal("not stored")
			}
			defer hit.Close()
			if hit.Size() != int64(len(tt.b.data)) {
				t.Errorf("stored Size = %d, want %d", hit.Size(), len(tt.b.data))
			}
		})
	}
}

// TestReaderGetsNoEndBeforeVerdict: a reader that has every announced
// byte of a fill still gets no io.EOF until the digest was checked; when
// it does not match, the reader gets the mismatch. (A reader that caught
// up with the upstream must not see a clean end of wrong bytes.)
func TestReaderGetsNoEndBeforeVerdict(t *testing.T) {
	c := openTest(t, "", 1<<30)
	waiting, onWait := signals(10)
	c.hooks = hooks{waits: onWait}
	b := newBlob(64<<10, 14)
	wrong := bytes.Clone(b.data)
	wrong[100] ^= 1
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // before c.Close, which waits for the fill
	u := &upstream{b: b, body: func() io.ReadCloser { return pr }}
	e, err := c.Fill(t.Context(), b.digest, u.fetch)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := pw.Write(wrong); err != nil { // every byte, the body not yet ended
		t.Fatal(err)
	}
	if _, err := e.ReadAt(make([]byte, len(wrong)), 0); err != nil {
		t.Fatal(err)
	}
	for len(waiting) > 0 { // the waits of that ReadAt
		<-waiting
	}
	if _, err := e.Seek(int64(len(wrong)), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := e.Read(make([]byte, 1))
		done <- err
	}()
	select {
	case <-waiting: // at the end of the bytes, waiting for the verdict
	case err := <-done:
		t.Fatalf("Read at the end of the bytes before the verdict: %v, want it to wait", err)
	}
	pw.Close()
	if err := <-done; !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("Read at the end of wrong bytes: %v, want ErrDigestMismatch", err)
	}
}
