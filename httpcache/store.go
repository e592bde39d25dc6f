package httpcache

import (
	"context"
	"errors"
	"io"
	"net/http"
)

// Store is the content the cache serves, by digest, in its own terms: a
// second implementation (an object store shared by gateways) needs none
// of another store's types. The gateway adapts *regcache.Cache to it.
type Store interface {
	// Get returns the stored, verified content of digest; false when it
	// is not held (or cannot be read).
	Get(ctx context.Context, digest string) (Entry, bool)
	// Fill returns digest's content, fetching it with fetch unless it is
	// stored or its fill is in flight, which the caller then joins: one
	// fetch per digest, whoever asks. The Entry may be read while the
	// fill goes on. An error wrapping ErrBypass means the store cannot
	// help: the request goes to the registry as without a cache.
	Fill(ctx context.Context, digest string, fetch FetchFunc) (Entry, error)
	// CountRequest counts one request's Result (the store's metrics and
	// statistics).
	CountRequest(r Result)
}

// Entry is one content being served: read it, seek in it, Close it when
// done (the caller of Get or Fill closes it).
type Entry interface {
	io.ReadSeekCloser
	// Size is the content's length; -1 while a fill of unknown length
	// goes on.
	Size() int64
	// Header is what the store keeps beside the content (Content-Type,
	// Docker-Content-Digest: storedHeader).
	Header() http.Header
	// Digest is the content's digest.
	Digest() string
	// Stored reports whether the content is stored and verified; false
	// for an Entry reading a fill in flight.
	Stored() bool
	// Verified waits for the end of the content's verification: nil once
	// every byte is there and matched the digest, else the fill's
	// error. A stored Entry is verified.
	Verified() error
}

// FetchFunc fetches the content of a fill from the registry; ctx ends
// when the fill is abandoned.
type FetchFunc func(ctx context.Context) (Fetched, error)

// Fetched is the registry's answer to a fill: Body (closed by the
// store), the Header to keep beside it, and Size (-1: unknown).
// FromCache is set by a store that answers from another cache (a shared
// tier) rather than the registry: those bytes are not upstream bytes.
type Fetched struct {
	Body      io.ReadCloser
	Header    http.Header
	Size      int64
	FromCache bool
}

// ErrBypass is wrapped by a Store's errors that mean "serve this request
// without the cache".
var ErrBypass = errors.New("httpcache: store unavailable, bypass it")

// Result is the outcome of one request for cacheable content: the
// audit record's cache word, and what Store.CountRequest counts.
type Result string

// The results (snigate_cache_requests_total's result label).
const (
	Hit     Result = "hit"     // served from the store after the registry said yes
	Miss    Result = "miss"    // filled from upstream (or joined a fill in flight)
	Bypass  Result = "bypass"  // the store could not help (ErrBypass): served from upstream
	Offline Result = "offline" // served from the store without asking an unreachable registry
)
