package cachestore

import (
	"testing"

	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/regcache"
)

// TestCacheStoreResultsAgree: the cache link's results are the store's,
// word for word (the audit record's cache field and the result label of
// snigate_cache_requests_total), so that the adapter's conversion counts
// every one.
func TestCacheStoreResultsAgree(t *testing.T) {
	tests := []struct {
		name  string
		link  httpcache.Result
		store regcache.Result
	}{
		{name: "hit", link: httpcache.Hit, store: regcache.Hit},
		{name: "miss", link: httpcache.Miss, store: regcache.Miss},
		{name: "bypass", link: httpcache.Bypass, store: regcache.Bypass},
		{name: "offline", link: httpcache.Offline, store: regcache.Offline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if regcache.Result(tt.link) != tt.store {
				t.Errorf("httpcache %q, regcache %q", tt.link, tt.store)
			}
		})
	}
}
