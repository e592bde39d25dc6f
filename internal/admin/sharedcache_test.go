package admin

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/snigate/snigate/s3tier"
)

// fakeShared is a gateway with a shared tier.
type fakeShared struct{ fakeCaches }

func (*fakeShared) SharedCacheStats() []s3tier.Stats {
	return []s3tier.Stats{{Route: "registry", Endpoint: "https://s3.internal:8333", Bucket: "snigate-cache",
		Prefix: "registry/", Hits: 96, Misses: 12, BytesRead: 3 << 29, BytesWritten: 310 << 20}}
}

// TestSharedCacheAPI: GET /api/cache/shared lists the shared tiers
// through the Client of `snigate ctl cache`, [] for a gateway without
// any, and the table shows one line per tier.
func TestSharedCacheAPI(t *testing.T) {
	tests := []struct {
		name   string
		caches cacheAPI
		want   int
	}{
		{name: "with a shared tier", caches: &fakeShared{}, want: 1},
		{name: "without", caches: &fakeCaches{}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, addr := startServer(t, Config{Caches: tt.caches}, "127.0.0.1:0")
			st, err := (&Client{Addr: addr}).SharedCaches(context.Background())
			if err != nil || len(st) != tt.want {
				t.Fatalf("SharedCaches: %+v %v, want %d", st, err, tt.want)
			}
			var b bytes.Buffer
			if err := WriteSharedCacheTable(&b, st); err != nil {
				t.Fatal(err)
			}
			if tt.want == 1 && !strings.Contains(b.String(), "https://s3.internal:8333/snigate-cache/registry/  96    12      0       1.5GiB  310MiB   -") {
				t.Errorf("table:\n%s", b.String())
			}
		})
	}
}
