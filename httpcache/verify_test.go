package httpcache

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// pausedBlob answers HEAD and GET of one digest path itself: GET sends
// body (which may not match the digest) but its last pauseBefore bytes,
// waits for last, sends them, then waits for end before it ends the
// response (over HTTP/2 the end of the stream is the fill's io.EOF).
type pausedBlob struct {
	path, digest string
	body         []byte
	pauseBefore  int
	last, end    chan struct{}
	next         http.Handler
}

func (b *pausedBlob) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != b.path {
		b.next.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Length", strconv.Itoa(len(b.body)))
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Docker-Content-Digest", b.digest)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodGet {
		return
	}
	cut := len(b.body) - b.pauseBefore
	_, _ = w.Write(b.body[:cut])
	http.NewResponseController(w).Flush()
	for i, gate := range []chan struct{}{b.last, b.end} {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		if i == 0 {
			_, _ = w.Write(b.body[cut:])
			http.NewResponseController(w).Flush()
		}
	}
}

// pulled is what one node got: status, announced length, body, error.
type pulled struct {
	status int
	length int64
	body   []byte
	err    error
}

// pullSignalling GETs path and reports on started once the response's
// header arrived (or the request failed), and on reached once at least
// n body bytes arrived (or the body ended).
func pullSignalling(c *http.Client, path, rng string, n int, started, reached chan<- struct{}) pulled {
	req, err := http.NewRequest(http.MethodGet, "https://"+registryName+path, nil)
	if err != nil {
		started <- struct{}{}
		reached <- struct{}{}
		return pulled{err: err}
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := c.Do(req)
	started <- struct{}{}
	if err != nil {
		reached <- struct{}{}
		return pulled{err: err}
	}
	defer resp.Body.Close()
	got := pulled{status: resp.StatusCode, length: resp.ContentLength}
	buf, signalled := make([]byte, 4096), false
	for {
		if !signalled && len(got.body) >= n {
			reached <- struct{}{}
			signalled = true
		}
		m, err := resp.Body.Read(buf)
		got.body = append(got.body, buf[:m]...)
		if err != nil {
			if err != io.EOF {
				got.err = err
			}
			break
		}
	}
	if !signalled {
		reached <- struct{}{}
	}
	return got
}

// TestFillHoldsLastBytesUntilDigestMatches: nodes (the filler and the
// joiners, HTTP/2 and HTTP/1.1, whole content and ranges ending at the
// end of the blob or in its middle) read a 256 KiB fill whose upstream
// pauses before its last 64 KiB, then, once every node got all but the
// held bytes, before its end (the fill's io.EOF, then its check). Upstream
// bytes that do not match the digest (sha256 or sha512) leave every
// node's response short and failed; the right bytes reach every node
// whole. The bug: readers got each byte as it was written and
// http.ServeContent completed the announced length before the digest
// check, so nodes got complete 200s of the wrong bytes ("served to
// nobody", said the log).
func TestFillHoldsLastBytesUntilDigestMatches(t *testing.T) {
	const size, pause = heldSize, 64 << 10
	tests := []struct {
		name  string
		algo  string
		wrong bool
	}{
		{name: "sha256 wrong bytes", algo: "sha256", wrong: true},
		{name: "sha512 wrong bytes", algo: "sha512", wrong: true},
		{name: "sha256 right bytes", algo: "sha256"},
		{name: "sha512 right bytes", algo: "sha512"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{})
			content := randomBytes(t, size)
			d := digestWith(tt.algo, content)
			b := &pausedBlob{path: blobPath(d), digest: d, body: content, pauseBefore: pause,
				last: make(chan struct{}), end: make(chan struct{}), next: w.up.reg}
			if tt.wrong {
				b.body = randomBytes(t, len(content))
			}
			w.up.set(func(f *fakeRegistry) { f.reg = b })
			got := pullHeld(t, w, b, heldNodes)
			checkHeld(t, tt.wrong, content, d, got)
			if n := w.up.count(http.MethodGet, b.path); n != 1 {
				t.Errorf("registry saw %d GETs, want 1 (one fill for every node)", n)
			}
			if s, want := w.store.Stats(), map[bool]int{true: 0, false: 1}[tt.wrong]; s.Entries != want {
				t.Errorf("the store holds %d entries, want %d", s.Entries, want)
			}
		})
	}
}

// heldSize is the blob of TestFillHoldsLastBytesUntilDigestMatches.
const heldSize = 256 << 10

// heldNode is a node reading the held fill: its protocol, its Range and
// the bytes of the content it must get.
type heldNode struct {
	proto, rng string
	from, to   int
}

// heldWholeNodes: heldNodes[:heldWholeNodes] ask the whole content.
const heldWholeNodes = 4

// heldNodes are the nodes reading the held fill.
var heldNodes = []heldNode{
	{proto: "h2", from: 0, to: heldSize},
	{proto: "http/1.1", from: 0, to: heldSize},
	{proto: "h2", from: 0, to: heldSize},
	{proto: "http/1.1", from: 0, to: heldSize},
	{proto: "http/1.1", rng: "bytes=100000-", from: 100000, to: heldSize},
	{proto: "h2", rng: "bytes=-150000", from: heldSize - 150000, to: heldSize},
	{proto: "h2", rng: fmt.Sprintf("bytes=0-%d", heldSize-1), from: 0, to: heldSize},
	{proto: "http/1.1", rng: "bytes=1000-50999", from: 1000, to: 51000},
}

// pullHeld has every node pull b while its upstream holds the last bytes:
// the whole-content nodes first, then the ranges; it lets the last bytes
// go once every node got all but the held ones, and returns what each
// node got.
func pullHeld(t *testing.T, w *world, b *pausedBlob, nodes []heldNode) []pulled {
	t.Helper()
	started, reached := make(chan struct{}, len(nodes)), make(chan struct{}, len(nodes))
	got := make([]pulled, len(nodes))
	var wg sync.WaitGroup
	pull := func(i int) {
		n, c := nodes[i], w.node(t, nodes[i].proto)
		wg.Go(func() {
			got[i] = pullSignalling(c, b.path, n.rng, max(0, n.to-n.from-HeldTail), started, reached)
		})
	}
	// The whole-content nodes first: a range of a digest neither
	// stored nor filling goes to the registry (coldrange.go); the
	// ranges join the fill they started.
	for i := range heldWholeNodes {
		pull(i)
	}
	awaitN(t, started, heldWholeNodes, "response headers")
	for i := heldWholeNodes; i < len(nodes); i++ {
		pull(i)
	}
	awaitN(t, started, len(nodes)-heldWholeNodes, "response headers")
	close(b.last)
	awaitN(t, reached, len(nodes), "all but the held bytes")
	close(b.end)
	wg.Wait()
	return got
}

// checkHeld: with wrong upstream bytes no node got a complete response;
// with the right ones every node got its bytes of content, whole.
func checkHeld(t *testing.T, wrong bool, content []byte, d string, got []pulled) {
	t.Helper()
	for i, n := range heldNodes {
		g := got[i]
		want := content[n.from:n.to]
		switch {
		case wrong && g.err == nil && g.length >= 0 && int64(len(g.body)) >= g.length:
			t.Errorf("node %d (%s %q): a complete %d of %d bytes from upstream bytes that do not match %s", i, n.proto, n.rng, g.status, len(g.body), d)
		case wrong && len(g.body) >= len(want):
			t.Errorf("node %d (%s %q): got all %d bytes (err %v) of bytes that do not match the digest", i, n.proto, n.rng, len(g.body), g.err)
		case !wrong && (g.err != nil || !bytes.Equal(g.body, want)):
			t.Errorf("node %d (%s %q): status %d, %d bytes, err %v; want bytes %d-%d of the content", i, n.proto, n.rng, g.status, len(g.body), g.err, n.from, n.to-1)
		}
	}
}

// digestWith is content's digest with algo ("sha256" or "sha512").
func digestWith(algo string, content []byte) string {
	if algo == "sha512" {
		sum := sha512.Sum512(content)
		return "sha512:" + hex.EncodeToString(sum[:])
	}
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// awaitN receives n signals from ch, or fails the test at its deadline.
func awaitN(t *testing.T, ch <-chan struct{}, n int, what string) {
	t.Helper()
	for i := range n {
		select {
		case <-ch:
		case <-time.After(waitLimit):
			t.Fatalf("%d of %d nodes: %s", i, n, what)
		}
	}
}
