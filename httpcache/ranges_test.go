package httpcache

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// manyRanges is a Range header of n one-byte ranges, every other byte.
func manyRanges(n int) string {
	var b strings.Builder
	b.WriteString("bytes=")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d-%d", 2*i, 2*i)
	}
	return b.String()
}

// TestAbusiveRangesGetWholeContent: a Range header of more than MaxRanges
// ranges (5,000 here, within the bridge's 64 KiB header bound), or of
// ranges out of order or overlapping, is answered 200 with the whole
// content, once; up to MaxRanges ranges in order get their multipart 206;
// a header of 60,000 ranges is beyond the header bound (431). The bug: 60,000 ranges gave an 8.5 MB
// answer of 60,000 parts (35 times the blob) and 0.9s of CPU.
func TestAbusiveRangesGetWholeContent(t *testing.T) {
	w := newWorld(t, worldOpts{})
	content := randomBytes(t, 64<<10)
	d := w.up.push(t, content)
	w.fill(t, d, content)
	tests := []struct {
		name, proto, rng string
		status           int
	}{
		{name: "5000 ranges http/1.1", proto: "http/1.1", rng: manyRanges(5000), status: http.StatusOK},
		{name: "5000 ranges h2", proto: "h2", rng: manyRanges(5000), status: http.StatusOK},
		{name: "60000 ranges http/1.1", proto: "http/1.1", rng: manyRanges(60000), status: http.StatusRequestHeaderFieldsTooLarge},
		{name: "one more than MaxRanges", proto: "h2", rng: manyRanges(MaxRanges + 1), status: http.StatusOK},
		{name: "MaxRanges in order", proto: "h2", rng: manyRanges(MaxRanges), status: http.StatusPartialContent},
		{name: "overlapping", proto: "h2", rng: "bytes=0-99,50-149", status: http.StatusOK},
		{name: "out of order", proto: "http/1.1", rng: "bytes=100-199,0-99", status: http.StatusOK},
		{name: "suffix overlapping", proto: "h2", rng: "bytes=65000-,-1000", status: http.StatusOK},
		{name: "two in order", proto: "h2", rng: "bytes=0-99,200-299", status: http.StatusPartialContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, h, err := get(w.node(t, tt.proto), blobPath(d), "Range", tt.rng)
			if err != nil {
				t.Fatal(err)
			}
			if status != tt.status {
				t.Fatalf("status %d (%d bytes, %s), want %d", status, len(body), h.Get("Content-Type"), tt.status)
			}
			if status == http.StatusOK && !bytes.Equal(body, content) {
				t.Errorf("200 of %d bytes, want the whole content (%d)", len(body), len(content))
			}
			if status == http.StatusRequestHeaderFieldsTooLarge {
				return
			}
			if status == http.StatusPartialContent && !strings.HasPrefix(h.Get("Content-Type"), "multipart/byteranges") {
				t.Errorf("206 with Content-Type %q, want multipart/byteranges", h.Get("Content-Type"))
			}
			if len(body) > len(content)+MaxRanges*200 {
				t.Errorf("answer of %d bytes for %d bytes of content", len(body), len(content))
			}
		})
	}
	if n := w.up.count(http.MethodGet, blobPath(d)); n != 1 {
		t.Errorf("registry saw %d GETs, want 1 (the fill)", n)
	}
}
