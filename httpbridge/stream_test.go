package httpbridge

import (
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
)

// TestLargeBlobBoundedMemory streams a blob far larger than any buffer
// through the bridge and checks that the live heap (measured after a
// collection every 32 MiB, so that garbage does not count) grows by less
// than a bound while it flows: the blob never sits in memory.
func TestLargeBlobBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MiB twice")
	}
	const size = 256 << 20
	const heapBound = 32 << 20
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			p := newTestPKI(t)
			chunk := make([]byte, 64<<10)
			up := startUpstream(t, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(size))
				for n := 0; n < size; n += len(chunk) {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}))
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
			resp, err := w.node(t, proto).Get("https://" + registryName + "/v2/team/app/blobs/" + dgst)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			live := func() uint64 {
				runtime.GC()
				metrics.Read(sample)
				return sample[0].Value.Uint64()
			}
			base := live()
			var total, peak uint64
			buf := make([]byte, 256<<10)
			for next := uint64(0); ; {
				n, err := resp.Body.Read(buf)
				total += uint64(n)
				if total >= next {
					if l := live(); l > base {
						peak = max(peak, l-base)
					}
					next += 32 << 20
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("after %d bytes: %v", total, err)
				}
			}
			if total != size {
				t.Fatalf("read %d bytes, want %d", total, size)
			}
			if peak > heapBound {
				t.Errorf("live heap grew by %d MiB while streaming %d MiB, want under %d MiB", peak>>20, size>>20, heapBound>>20)
			}
			t.Logf("%s: %d MiB streamed, live heap grew by at most %d KiB", proto, size>>20, peak>>10)
		})
	}
}
