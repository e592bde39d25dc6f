package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"
)

// upstreamStats counts the TLS handshakes the bridge upstream completed:
// how many resumed a session and which key exchange they used. It shows
// whether a proxy resumes its upstream leg and what it negotiates there.
type upstreamStats struct {
	mu      sync.Mutex
	Total   int64            `json:"total"`
	Resumed int64            `json:"resumed"`
	Groups  map[string]int64 `json:"groups"`
	// BlobBytes is the body bytes of blob responses the registry sent
	// (every proxy's fetches; the cache scenarios' uplink traffic).
	BlobBytes int64 `json:"blob_bytes"`
}

func (s *upstreamStats) addBlobBytes(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.BlobBytes += n
}

func (s *upstreamStats) record(cs tls.ConnectionState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Total++
	if cs.DidResume {
		s.Resumed++
	}
	if s.Groups == nil {
		s.Groups = map[string]int64{}
	}
	s.Groups[cs.CurveID.String()]++
}

func (s *upstreamStats) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	json.NewEncoder(w).Encode(s)
}

// snapshot is a copy of the counters.
type upstreamSnapshot struct {
	Total, Resumed int64
	Groups         map[string]int64
	BlobBytes      int64 `json:"blob_bytes"`
}

func fetchUpstreamStats(addr string) (upstreamSnapshot, error) {
	var s upstreamSnapshot
	if addr == "" {
		return s, fmt.Errorf("no upstream stats address")
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&s)
	return s, err
}

// upstreamDelta records, in res, what the upstream saw between two
// snapshots: the resumed share of its handshakes and the main group.
func upstreamDelta(res *Result, before, after upstreamSnapshot, err error) {
	if err != nil || after.Total <= before.Total {
		return
	}
	n := after.Total - before.Total
	res.Values["up_handshakes"] = float64(n)
	res.Values["up_resumed_frac"] = float64(after.Resumed-before.Resumed) / float64(n)
	groups := maps.Clone(after.Groups)
	top, topN := "", int64(0)
	for g, c := range groups {
		if d := c - before.Groups[g]; d > topN {
			top, topN = g, d
		}
	}
	res.Notes["upstream_group"] = top
}
