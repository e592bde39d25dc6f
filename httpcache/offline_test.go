package httpcache

import (
	"bytes"
	"strings"
	"testing"
)

// TestRegistryDown: with every upstream down, offline: true serves the
// cached digests (counted offline, logged), answers /v2/ with 200 {},
// and 503 for content it does not hold; offline: false fails every
// request at once, as without a cache.
func TestRegistryDown(t *testing.T) {
	tests := []struct {
		name                  string
		offline               bool
		cached, base, notHeld int
		offlineCount          uint64
	}{
		{name: "offline true", offline: true, cached: 200, base: 200, notHeld: 503, offlineCount: 1},
		{name: "offline false", offline: false, cached: failed, base: failed, notHeld: failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, worldOpts{offline: tt.offline})
			content := randomBytes(t, 128<<10)
			d := w.up.push(t, content)
			other := w.up.push(t, randomBytes(t, 1<<10))
			w.fill(t, d, content)
			w.up.stop()
			c := w.node(t, "http/1.1")
			status, body, _, err := get(c, blobPath(d))
			if err != nil || !statusIs(status, tt.cached) || tt.cached == 200 && !bytes.Equal(body, content) {
				t.Errorf("cached blob: status %d, %d bytes, err %v; want %d", status, len(body), err, tt.cached)
			}
			status, body, _, err = get(c, "/v2/")
			if err != nil || !statusIs(status, tt.base) || tt.base == 200 && string(body) != "{}" {
				t.Errorf("/v2/: status %d body %q err %v; want %d", status, body, err, tt.base)
			}
			status, body, _, err = get(c, blobPath(other))
			if err != nil || !statusIs(status, tt.notHeld) || !strings.Contains(string(body), `"code":"UNAVAILABLE"`) {
				t.Errorf("blob not held: status %d body %q err %v; want %d with an OCI error", status, body, err, tt.notHeld)
			}
			if s := w.store.Stats(); s.Offline != tt.offlineCount {
				t.Errorf("offline count %d, want %d", s.Offline, tt.offlineCount)
			}
			if tt.offline && !strings.Contains(w.logs.String(), "served from the cache without asking the registry") {
				t.Errorf("no offline log line; log:\n%s", w.logs)
			}
		})
	}
}

// failed stands for the bridge's answers when no upstream answers: 502
// (all failed) or 503 (none healthy, once passive health marked it down).
const failed = -1

func statusIs(got, want int) bool {
	if want == failed {
		return got == 502 || got == 503
	}
	return got == want
}
