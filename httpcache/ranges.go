package httpcache

import (
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// MaxRanges is the most ranges one request may ask of the cache (nginx's
// max_ranges, Apache's MaxRanges). A Range header with more, or with
// ranges out of order or overlapping, is ignored: the node gets 200 with
// the whole content, which RFC 9110 allows, and never a multipart answer
// many times the size of the content.
const MaxRanges = 16

// rangesAbusive reports whether the Range header of r asks for more than
// MaxRanges ranges, or for several that are not in ascending order
// without overlap, of content of size bytes (known). A header it cannot
// parse is not abusive: http.ServeContent answers it as it does.
func rangesAbusive(r *http.Request, size int64) bool {
	s := r.Header.Get("Range")
	spec, ok := strings.CutPrefix(s, "bytes=")
	if !ok || !strings.Contains(spec, ",") {
		return false
	}
	if strings.Count(spec, ",") >= MaxRanges {
		return true // more than MaxRanges, counted before any parsing
	}
	prevEnd, n := int64(-1), 0
	for ra := range strings.SplitSeq(spec, ",") {
		ra = textproto.TrimString(ra)
		if ra == "" {
			continue
		}
		start, end, ok := resolveRange(ra, size)
		if !ok {
			return false
		}
		if start >= size {
			continue // satisfies nothing; ServeContent skips it too
		}
		if n++; n > MaxRanges || start <= prevEnd {
			return true
		}
		prevEnd = end
	}
	return false
}

// resolveRange is one range spec ("a-b", "a-", "-n") as its first and
// last byte in content of size bytes; ok false when it does not parse.
func resolveRange(ra string, size int64) (start, end int64, ok bool) {
	first, last, found := strings.Cut(ra, "-")
	if !found {
		return 0, 0, false
	}
	first, last = textproto.TrimString(first), textproto.TrimString(last)
	if first == "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false
		}
		return max(size-n, 0), size - 1, true
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	end = size - 1
	if last != "" {
		if end, err = strconv.ParseInt(last, 10, 64); err != nil || end < start {
			return 0, 0, false
		}
		end = min(end, size-1)
	}
	return start, end, true
}

// withoutRanges is r without its Range and If-Range headers, when they
// are abusive (rangesAbusive): the whole content is served.
func withoutRanges(r *http.Request, size int64) *http.Request {
	if !rangesAbusive(r, size) {
		return r
	}
	r2 := r.Clone(r.Context())
	r2.Header.Del("Range")
	r2.Header.Del("If-Range")
	return r2
}
