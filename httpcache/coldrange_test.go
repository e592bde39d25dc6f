package httpcache

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// heldBlob answers HEAD and GET of one digest path itself: a GET with a
// Range at once (206, http.ServeContent), a whole GET with its header and
// first half, then the rest once release is closed. It records the Range
// of every GET ("" for a whole one).
type heldBlob struct {
	path, digest string
	body         []byte
	release      chan struct{}
	next         http.Handler

	mu     sync.Mutex
	ranges []string
}

func (b *heldBlob) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != b.path {
		b.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Docker-Content-Digest", b.digest)
	w.Header().Set("Content-Type", "application/octet-stream")
	if r.Method == http.MethodGet {
		b.mu.Lock()
		b.ranges = append(b.ranges, r.Header.Get("Range"))
		b.mu.Unlock()
	}
	if r.Method != http.MethodGet || r.Header.Get("Range") != "" {
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b.body))
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b.body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.body[:len(b.body)/2])
	http.NewResponseController(w).Flush()
	select {
	case <-b.release:
		_, _ = w.Write(b.body[len(b.body)/2:])
	case <-r.Context().Done():
	}
}

func (b *heldBlob) gets() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.ranges...)
}

// TestRangeOfColdBlobAnsweredAtOnce: a Range GET of a blob the cache
// neither holds nor fills is answered at once from the registry while one
// whole fill goes on beside it: the node has its whole range while the
// registry still holds the fill's body, the registry sees one whole GET
// plus the range, and once stored the next range is a hit. The bug: the
// range waited for the fill to reach its bytes (a lazy-pulling
// snapshotter waited for the whole blob).
func TestRangeOfColdBlobAnsweredAtOnce(t *testing.T) {
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			w := newWorld(t, worldOpts{})
			content := randomBytes(t, 1<<20)
			d := digestOf(content)
			b := &heldBlob{path: blobPath(d), digest: d, body: content, release: make(chan struct{}), next: w.up.reg}
			w.up.set(func(f *fakeRegistry) { f.reg = b })
			c := w.node(t, proto)
			const from, to = 900 << 10, 900<<10 + 999 // past the half the fill has sent
			status, body, _, err := get(c, blobPath(d), "Range", "bytes="+strconv.Itoa(from)+"-"+strconv.Itoa(to))
			if err != nil || status != http.StatusPartialContent || !bytes.Equal(body, content[from:to+1]) {
				t.Fatalf("range while the fill is held: %d, %d bytes, %v; want 206 and bytes %d-%d", status, len(body), err, from, to)
			}
			select {
			case <-b.release:
			default:
				close(b.release) // the whole range came before the fill could end
			}
			status, body, _, err = get(c, blobPath(d)) // joins the fill, or hits
			if err != nil || status != 200 || !bytes.Equal(body, content) {
				t.Fatalf("whole blob after: %d, %d bytes, %v", status, len(body), err)
			}
			status, body, _, err = get(c, blobPath(d), "Range", "bytes=0-9")
			if err != nil || status != http.StatusPartialContent || !bytes.Equal(body, content[:10]) {
				t.Fatalf("range once stored: %d %q %v", status, body, err)
			}
			got := b.gets()
			if len(got) != 2 || got[0] == got[1] || (got[0] != "" && got[1] != "") {
				t.Errorf("the registry saw GETs with ranges %q, want one whole GET and the node's range", got)
			}
			if s := w.store.Stats(); s.Entries != 1 {
				t.Errorf("the store holds %d entries, want the blob", s.Entries)
			}
		})
	}
}
