package httpverify

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/snigate/snigate/oci"
)

// errNotFound is a 404 from the registry: no such signature.
var errNotFound = errors.New("not found")

// fetcher reads signatures for one node request through the links below
// this one (the cache, the proxy): with the node's credentials
// (Authorization) and connection, each with its own annotation so the
// node's audit record is not touched.
type fetcher struct {
	next http.Handler
	node *http.Request
}

// get reads path (GET) and returns at most limit bytes of a 2xx body;
// errNotFound for a 404, an error naming the status for others.
func (f fetcher) get(path, accept string, limit int) ([]byte, http.Header, error) {
	u := &url.URL{Path: path}
	req := f.node.Clone(oci.WithAnnotation(f.node.Context(), oci.NewAnnotation(oci.ParseURL(u))))
	req.Method, req.Body, req.ContentLength = http.MethodGet, http.NoBody, 0
	req.URL = &url.URL{Scheme: f.node.URL.Scheme, Host: f.node.URL.Host, Path: path}
	req.RequestURI = u.RequestURI()
	req.Header = http.Header{}
	for _, k := range []string{"Authorization", "User-Agent"} {
		if v := f.node.Header.Values(k); len(v) > 0 {
			req.Header[k] = v
		}
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := newRecorder(limit)
	err := serveInto(f.next, rec, req)
	switch {
	case rec.overflow: // the proxy's copy aborted by the limit, or the cache's
		return nil, nil, fmt.Errorf("GET %s: more than %d bytes", path, limit)
	case err != nil:
		return nil, nil, fmt.Errorf("GET %s: %w", path, err)
	case rec.status == http.StatusNotFound:
		return nil, nil, fmt.Errorf("GET %s: %w", path, errNotFound)
	case rec.status < 200 || rec.status > 299:
		return nil, nil, fmt.Errorf("GET %s: the registry answered %d %s", path, rec.status, bound(strings.TrimSpace(rec.body.String())))
	}
	return rec.body.Bytes(), rec.header, nil
}

// manifest reads a manifest of repo by reference.
func (f fetcher) manifest(repo, ref string) (Manifest, error) {
	b, _, err := f.get("/v2/"+repo+"/manifests/"+ref, oci.ManifestAccept, MaxManifest)
	if err != nil {
		return Manifest{}, err
	}
	return ParseManifest(b)
}

// blob reads a blob of repo (a signature payload) and checks it is the
// content of digest.
func (f fetcher) blob(repo, digest string) ([]byte, error) {
	b, _, err := f.get("/v2/"+repo+"/blobs/"+digest, "", MaxPayload)
	if err != nil {
		return nil, err
	}
	if !digestMatches(digest, b) {
		return nil, fmt.Errorf("blob %s: the registry's content does not match its digest", digest)
	}
	return b, nil
}

// referrers lists the referrers of digest: the referrers API, else
// (404: a registry without it) the referrers tag schema "sha256-<hex>".
func (f fetcher) referrers(repo, digest string) ([]Descriptor, error) {
	b, _, err := f.get("/v2/"+repo+"/referrers/"+digest, "application/vnd.oci.image.index.v1+json", MaxManifest)
	if errors.Is(err, errNotFound) {
		b, _, err = f.get("/v2/"+repo+"/manifests/"+tagOf(digest), oci.ManifestAccept, MaxManifest)
	}
	if err != nil {
		return nil, err
	}
	idx, err := ParseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("referrers of %s: %w", digest, err)
	}
	return idx.Manifests, nil
}

// tagOf is digest as a tag: "sha256:<hex>" -> "sha256-<hex>" (the
// signature tag without ".sig", the referrers tag schema).
func tagOf(digest string) string { return strings.Replace(digest, ":", "-", 1) }

// serveInto runs h for req into rec, turning a handler's abort (the
// proxy's http.ErrAbortHandler on a failed copy) into an error.
func serveInto(h http.Handler, rec *recorder, req *http.Request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				panic(p)
			}
			err = errors.New("the answer was cut short")
		}
	}()
	h.ServeHTTP(rec, req)
	return nil
}

// recorder is an http.ResponseWriter holding an answer of at most limit
// bytes of body.
type recorder struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	limit    int
	overflow bool
}

func newRecorder(limit int) *recorder { return &recorder{header: http.Header{}, limit: limit} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.body.Len()+len(p) > r.limit {
		r.overflow = true
		return 0, fmt.Errorf("answer of more than %d bytes", r.limit)
	}
	return r.body.Write(p)
}

// Flush is a no-op: the answer is sent whole, after the decision.
func (r *recorder) Flush() {}

// writeTo sends the held answer to w.
func (r *recorder) writeTo(w http.ResponseWriter, head bool) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	if !head {
		_, _ = w.Write(r.body.Bytes())
	}
}
