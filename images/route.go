package images

import (
	"context"
	"io"
	"net/http"
	"time"
)

// Route is one route's way to its registry and its store.
type Route struct {
	Name  string  // the route's name (log lines, results)
	Host  string  // the registry name its requests carry (Host)
	Fetch Fetcher // the route's chain
	Store Store   // the route's cache
}

// Fetcher serves a request of the gateway's own through the route's
// chain, as a node's request is served once admitted (the cache link
// fills the store as it answers); *httpbridge.Bridge is one. The error is
// the failure the chain noted, the response aborted mid-body among them.
type Fetcher interface {
	ServeOwn(w http.ResponseWriter, r *http.Request) error
}

// Store is the route's cache as the images need it.
type Store interface {
	// Holds reports whether digest is stored (not checked again: a
	// stored file is verified before it is served).
	Holds(digest string) bool
	// Open returns digest's stored, verified content; false when not
	// held. The caller closes it.
	Open(ctx context.Context, digest string) (Blob, bool)
	// Put stores body as digest's content, verified against it, with
	// header beside it (Content-Type); size -1 when unknown.
	Put(ctx context.Context, digest string, header http.Header, size int64, body io.Reader) error
	// LookupTag returns the digest the registry last answered for
	// repository:tag and when.
	LookupTag(repository, tag string) (digest string, confirmed time.Time, ok bool)
	// RememberTag records repository:tag's digest as confirmed at at.
	RememberTag(repository, tag, digest string, at time.Time) error
}

// Blob is stored content being read.
type Blob interface {
	io.ReadCloser
	Size() int64
	Header() http.Header
}

// ownRequest is a request of the gateway's own for path on rt.
func (rt Route) ownRequest(ctx context.Context, method, path string) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, method, "https://"+rt.Host+path, nil)
	if err != nil {
		return nil, err
	}
	r.Host = rt.Host
	r.RemoteAddr = "snigate"
	r.Header.Set("User-Agent", UserAgent)
	return r, nil
}

// UserAgent is the User-Agent of the gateway's own requests.
const UserAgent = "snigate-cache"

// sink is the http.ResponseWriter of an own request: a 200's body goes
// to w, counted; another status's first bytes are kept for the error.
type sink struct {
	h      http.Header
	status int
	w      io.Writer
	n      int64
	errMsg []byte
}

func newSink(w io.Writer) *sink { return &sink{h: http.Header{}, w: w} }

func (s *sink) Header() http.Header { return s.h }

func (s *sink) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
}

func (s *sink) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if s.status != http.StatusOK {
		if room := 512 - len(s.errMsg); room > 0 {
			s.errMsg = append(s.errMsg, p[:min(room, len(p))]...)
		}
		return len(p), nil
	}
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

// Flush lets the chain flush as it does to a node.
func (s *sink) Flush() {}
