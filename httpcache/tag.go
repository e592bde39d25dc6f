package httpcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// MaxTagManifest is the largest manifest-by-tag answer kept to fill its
// by-digest entry (the distribution specification's manifest limit);
// larger ones pass through unkept.
const MaxTagManifest = 4 << 20

// serveTag answers a manifest by tag from the store when the registry's
// HEAD names a digest it holds (serveTagFromStore), else from the
// registry: through req.next, or with Offline through the cache's own
// request, so that "no upstream answers" is told apart: then the tag's
// remembered digest answers it (Tags), else 503. The registry's 200 is
// remembered (rememberTag).
// A complete 200 to a GET whose Docker-Content-Digest is the sha256 of
// its body fills that digest's entry.
func (c *Cache) serveTag(w http.ResponseWriter, r *http.Request, req request) {
	if !c.cfg.Offline && c.serveTagFromStore(w, r, req) {
		return
	}
	tw := &teeWriter{ResponseWriter: w, keep: r.Method == http.MethodGet}
	if c.cfg.Offline {
		if !c.relayTag(tw, r, req) {
			return // answered without the registry: nothing to keep
		}
	} else {
		req.next.ServeHTTP(tw, r)
	}
	if d, ok := tw.digest(); ok {
		c.keepManifest(r, d, tw)
		c.rememberTag(req, tw.status, tw.Header())
	} else if r.Method == http.MethodHead {
		c.rememberTag(req, tw.status, tw.Header())
	}
}

// relayTag sends the manifest request itself and relays the answer, and
// reports true; when no upstream answers, it answers from the tag's
// remembered digest (serveRememberedTag) or 503, and reports false.
func (c *Cache) relayTag(w http.ResponseWriter, r *http.Request, req request) bool {
	resp, err := req.roundTrip(r.Context(), r, r.Method)
	if err == nil {
		req.ann.SetDigest(resp.Header.Get("Docker-Content-Digest"))
		relay(w, r, req, resp)
		return true
	}
	if r.Context().Err() != nil {
		req.ann.Fail(err, false)
		return false
	}
	if c.serveRememberedTag(w, r, req, err) {
		return false
	}
	req.ann.Fail(err, false)
	oci.WriteError(w, http.StatusServiceUnavailable, oci.CodeUnavailable,
		fmt.Sprintf("no upstream answers and the cache remembers no digest for the tag %s:%s (cache.tags; ask by digest): %v",
			req.API.Repository, req.API.Reference, err))
	return false
}

// keepManifest fills digest d with the manifest the node was just given.
// The fill runs without the node's cancellation; the node's request ends
// once it is stored (a moment: the bytes are in memory), so that a pull
// by digest right after is a hit.
func (c *Cache) keepManifest(r *http.Request, d string, tw *teeWriter) {
	body, header := tw.buf.Bytes(), storedHeader(tw.Header())
	fetch := func(context.Context) (Fetched, error) {
		return Fetched{Body: io.NopCloser(bytes.NewReader(body)), Header: header, Size: int64(len(body))}, nil
	}
	if e, err := c.cfg.Store.Fill(context.WithoutCancel(r.Context()), d, fetch); err == nil {
		_ = e.Verified()
		_ = e.Close()
	}
}

// teeWriter keeps a copy of a 200 answer's body up to MaxTagManifest.
type teeWriter struct {
	http.ResponseWriter
	keep   bool // a GET: its body may be kept
	status int
	buf    bytes.Buffer
	over   bool
}

func (t *teeWriter) WriteHeader(code int) {
	if t.status == 0 && code >= 200 {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(p []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	n, err := t.ResponseWriter.Write(p)
	if t.keep && !t.over {
		if t.buf.Len()+n > MaxTagManifest {
			t.over, t.buf = true, bytes.Buffer{}
		} else {
			t.buf.Write(p[:n])
		}
	}
	return n, err
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// digest is the answer's Docker-Content-Digest when the kept body is a
// whole 200 that hashes to it.
func (t *teeWriter) digest() (string, bool) {
	if !t.keep || t.over || t.status != http.StatusOK || t.buf.Len() == 0 {
		return "", false
	}
	d := t.Header().Get("Docker-Content-Digest")
	sum := sha256.Sum256(t.buf.Bytes())
	return d, d == "sha256:"+hex.EncodeToString(sum[:])
}

// relay writes the registry's answer resp to w; a body that fails
// mid-way aborts the response.
func relay(w http.ResponseWriter, r *http.Request, req request, resp *http.Response) {
	defer resp.Body.Close()
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, resp.Body); err != nil && r.Context().Err() == nil {
		req.ann.Fail(fmt.Errorf("relaying the registry's answer: %w", err), true)
		panic(http.ErrAbortHandler)
	}
}
