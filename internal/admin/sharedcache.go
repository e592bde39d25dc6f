package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/snigate/snigate/regcache"
	"github.com/snigate/snigate/s3tier"
)

// sharedCacheLister is the optional capability of Config.Caches behind
// GET /api/cache/shared: the figures of the routes' shared tiers
// (routes[].http.cache.shared).
type sharedCacheLister interface {
	SharedCacheStats() []s3tier.Stats
}

// listSharedCaches handles GET /api/cache/shared: [] when no route has a
// shared tier.
func (s *Server) listSharedCaches(w http.ResponseWriter, r *http.Request) {
	sl, ok := s.cfg.Caches.(sharedCacheLister)
	if s.cfg.Caches == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	st := []s3tier.Stats{}
	if ok {
		st = sl.SharedCacheStats()
	}
	writeJSON(w, http.StatusOK, st)
}

// SharedCaches returns the figures of every route's shared tier.
func (c *Client) SharedCaches(ctx context.Context) ([]s3tier.Stats, error) {
	var st []s3tier.Stats
	if err := c.do(ctx, http.MethodGet, "/api/cache/shared", nil, &st); err != nil {
		return nil, err
	}
	return st, nil
}

// sharedHeader is the first line of WriteSharedCacheTable.
var sharedHeader = []string{"ROUTE", "SHARED", "HITS", "MISSES", "ERRORS", "READ", "WRITTEN", "LAST_ERROR"}

// WriteSharedCacheTable writes st as an aligned table, one shared tier a
// line, for `snigate ctl cache` (below the local tiers' table):
//
//	ROUTE     SHARED                                          HITS  MISSES  ERRORS  READ    WRITTEN  LAST_ERROR
//	registry  https://s3.internal:8333/snigate-cache/registry/  96    12      0       1.2GiB  310MiB   -
func WriteSharedCacheTable(w io.Writer, st []s3tier.Stats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(sharedHeader, "\t"))
	for _, s := range st {
		last := s.LastError
		if last == "" {
			last = "-"
		}
		fmt.Fprintln(tw, strings.Join([]string{
			cell(s.Route), cell(strings.TrimSuffix(s.Endpoint, "/") + "/" + s.Bucket + "/" + s.Prefix),
			strconv.FormatInt(s.Hits, 10), strconv.FormatInt(s.Misses, 10), strconv.FormatInt(s.Errors, 10),
			regcache.FormatSize(s.BytesRead), regcache.FormatSize(s.BytesWritten), cell(last),
		}, "\t"))
	}
	return tw.Flush()
}
