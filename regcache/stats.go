package regcache

import "sync/atomic"

// Result is the outcome of one request for cacheable content, the result
// label of snigate_cache_requests_total and the audit record's cache field.
type Result string

// The results of snigate_cache_requests_total (docs/operations.md, "Metrics").
const (
	Hit     Result = "hit"     // served from the cache after the registry said yes
	Miss    Result = "miss"    // filled from upstream (or joined a fill in flight)
	Bypass  Result = "bypass"  // the cache could not help (ErrBypass): served from upstream
	Offline Result = "offline" // served from the cache without asking an unreachable registry
)

var results = [...]Result{Hit, Miss, Bypass, Offline}

// counts are the totals behind Stats.
type counts struct {
	requests      [len(results)]atomic.Uint64
	upstreamBytes atomic.Int64
	evictedBytes  atomic.Int64
	errors        atomic.Uint64
	corrupt       atomic.Uint64
}

// CountRequest counts one request's result in snigate_cache_requests_total
// and in Stats. The HTTP bridge calls it once per request it handled with
// the cache; results other than the four constants are ignored.
func (c *Cache) CountRequest(r Result) {
	for i, res := range results {
		if res == r {
			c.counts.requests[i].Add(1)
			addCounter(c.m.requests[r], 1)
			return
		}
	}
}

// Stats is a snapshot of a Cache, for `snigate ctl cache` and the admin API.
type Stats struct {
	Route         string  `json:"route"`
	Dir           string  `json:"dir"`
	MaxSize       int64   `json:"max_size"`
	Bytes         int64   `json:"bytes"`   // stored content
	Entries       int     `json:"entries"` // stored digests
	Fills         int     `json:"fills"`   // fills in flight
	Hits          uint64  `json:"hits"`
	Misses        uint64  `json:"misses"`
	Bypasses      uint64  `json:"bypasses"`
	Offline       uint64  `json:"offline"`
	HitRatio      float64 `json:"hit_ratio"` // (hits + offline) / requests; 0 before the first
	UpstreamBytes int64   `json:"upstream_bytes"`
	EvictedBytes  int64   `json:"evicted_bytes"`
	Errors        uint64  `json:"errors"`  // failures that made requests bypass the cache
	Corrupt       uint64  `json:"corrupt"` // stored files that failed verification
	// Unavailable says why the directory could not be opened ("" when it
	// was): the cache then holds nothing and every request bypasses it.
	Unavailable string `json:"unavailable,omitempty"`
}

// Stats returns the cache's current figures.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	s := Stats{Route: c.cfg.Route, Dir: c.cfg.Dir, MaxSize: c.maxSize,
		Bytes: c.idx.bytes, Entries: c.idx.len(), Fills: len(c.fills)}
	if c.unavailable != nil {
		s.Unavailable = c.unavailable.Error()
	}
	c.mu.Unlock()
	n := &c.counts
	s.Hits, s.Misses = n.requests[0].Load(), n.requests[1].Load()
	s.Bypasses, s.Offline = n.requests[2].Load(), n.requests[3].Load()
	if total := s.Hits + s.Misses + s.Bypasses + s.Offline; total > 0 {
		s.HitRatio = float64(s.Hits+s.Offline) / float64(total)
	}
	s.UpstreamBytes, s.EvictedBytes = n.upstreamBytes.Load(), n.evictedBytes.Load()
	s.Errors, s.Corrupt = n.errors.Load(), n.corrupt.Load()
	return s
}

// publishSize sets the size gauges from the index. Called with c.mu held
// (or before the Cache is shared).
func (c *Cache) publishSize() {
	setGauge(c.m.bytes, float64(c.idx.bytes))
	setGauge(c.m.entries, float64(c.idx.len()))
}
