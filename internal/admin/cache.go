package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/snigate/snigate/regcache"
)

// cacheAPI is what /api/cache needs from the gateway: the figures of the
// http routes' caches, and removing content from them.
type cacheAPI interface {
	CacheStats() []regcache.Stats
	// PurgeCache removes digest ("": all content) from every cache and
	// returns the figures after it.
	PurgeCache(digest string) ([]regcache.Stats, error)
}

// purgeRequest is the body of POST /api/cache/purge: {} removes all
// content, {"digest":"sha256:..."} one digest.
type purgeRequest struct {
	Digest string `json:"digest"`
}

// digestPattern is a digest the cache addresses.
var digestPattern = regexp.MustCompile(`^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$`)

func (s *Server) listCaches(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Caches == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	writeJSON(w, http.StatusOK, s.cfg.Caches.CacheStats())
}

// purgeCache handles POST /api/cache/purge.
func (s *Server) purgeCache(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Caches == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	req, code, err := readPurge(w, r)
	if err != nil {
		writeError(w, code, err.Error())
		return
	}
	st, err := s.cfg.Caches.PurgeCache(req.Digest)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "purge: "+err.Error())
		return
	}
	what := req.Digest
	if what == "" {
		what = "all"
	}
	s.log.Info("cache purged through the admin API", "digest", what, "client", r.RemoteAddr)
	writeJSON(w, http.StatusOK, st)
}

const purgeBody = `{} (everything) or {"digest":"sha256:<64 hex>"}`

func readPurge(w http.ResponseWriter, r *http.Request) (purgeRequest, int, error) {
	var req purgeRequest
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		return req, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q: want application/json, with a body %s", ct, purgeBody)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return req, http.StatusBadRequest, fmt.Errorf("read request body: %v; want %s", err, purgeBody)
	}
	if err := decodeStrict(data, &req); err != nil {
		return req, http.StatusBadRequest, fmt.Errorf("bad request body: %v; want %s", err, purgeBody)
	}
	if req.Digest != "" && !digestPattern.MatchString(req.Digest) {
		return req, http.StatusBadRequest, fmt.Errorf("digest %q: want sha256: and 64 lowercase hex digits, as the registry names content", req.Digest)
	}
	return req, 0, nil
}

// Caches returns the figures of every http route's cache.
func (c *Client) Caches(ctx context.Context) ([]regcache.Stats, error) {
	var st []regcache.Stats
	if err := c.do(ctx, http.MethodGet, "/api/cache", nil, &st); err != nil {
		return nil, err
	}
	return st, nil
}

// PurgeCache removes digest ("": everything) from every cache and returns
// their figures after it.
func (c *Client) PurgeCache(ctx context.Context, digest string) ([]regcache.Stats, error) {
	if digest != "" && !digestPattern.MatchString(digest) {
		return nil, errors.New("purge: want a digest such as sha256:<64 hex>, or none to remove everything")
	}
	body, err := json.Marshal(purgeRequest{Digest: digest})
	if err != nil {
		return nil, err
	}
	var st []regcache.Stats
	if err := c.do(ctx, http.MethodPost, "/api/cache/purge", bytes.NewReader(body), &st); err != nil {
		return nil, err
	}
	return st, nil
}

// cacheHeader is the first line of WriteCacheTable.
var cacheHeader = []string{"ROUTE", "DIR", "SIZE", "MAX_SIZE", "ENTRIES", "FILLS", "HIT_RATIO", "REQUESTS", "ERRORS"}

// WriteCacheTable writes st as an aligned table, one cache a line, for
// `snigate ctl cache`:
//
//	ROUTE     DIR                          SIZE    MAX_SIZE  ENTRIES  FILLS  HIT_RATIO  REQUESTS  ERRORS
//	registry  /var/cache/snigate/registry  1.5GiB  50GiB     212      0      87.5%      1600      0
//
// REQUESTS counts hit, miss, bypass and offline; HIT_RATIO is (hit +
// offline) / REQUESTS. ERRORS says "unavailable: ..." when the directory
// could not be opened.
func WriteCacheTable(w io.Writer, st []regcache.Stats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cacheHeader, "\t"))
	for _, s := range st {
		errs := strconv.FormatUint(s.Errors, 10)
		if s.Unavailable != "" {
			errs = "unavailable: " + s.Unavailable
		}
		fmt.Fprintln(tw, strings.Join([]string{
			cell(s.Route), cell(s.Dir), regcache.FormatSize(s.Bytes), regcache.FormatSize(s.MaxSize),
			strconv.Itoa(s.Entries), strconv.Itoa(s.Fills), fmt.Sprintf("%.1f%%", 100*s.HitRatio),
			strconv.FormatUint(s.Hits+s.Misses+s.Bypasses+s.Offline, 10), cell(errs),
		}, "\t"))
	}
	return tw.Flush()
}
