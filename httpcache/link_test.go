package httpcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/snigate/snigate/oci"
)

// memStore is a Store in memory: what a second implementation needs is
// this package's types alone.
type memStore struct {
	mu      sync.Mutex
	content map[string][]byte
	counted []Result
}

func (s *memStore) Get(_ context.Context, digest string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.content[digest]
	if !ok {
		return nil, false
	}
	return &memEntry{Reader: bytes.NewReader(b), digest: digest, size: int64(len(b))}, true
}

func (s *memStore) Fill(ctx context.Context, digest string, fetch FetchFunc) (Entry, error) {
	f, err := fetch(ctx)
	if err != nil {
		return nil, err
	}
	defer f.Body.Close()
	b, err := io.ReadAll(f.Body)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.content[digest] = b
	s.mu.Unlock()
	return &memEntry{Reader: bytes.NewReader(b), digest: digest, size: int64(len(b)), filling: true}, nil
}

func (s *memStore) CountRequest(r Result) {
	s.mu.Lock()
	s.counted = append(s.counted, r)
	s.mu.Unlock()
}

type memEntry struct {
	*bytes.Reader
	digest  string
	size    int64
	filling bool // returned by Fill: served as a fill in flight is
}

func (e *memEntry) Close() error        { return nil }
func (e *memEntry) Size() int64         { return e.size }
func (e *memEntry) Header() http.Header { return http.Header{} }
func (e *memEntry) Digest() string      { return e.digest }
func (e *memEntry) Stored() bool        { return !e.filling }
func (e *memEntry) Verified() error     { return nil }

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// linkCase is a request to the cache link, the store and registry behind it, and the answer.
type linkCase struct {
	name, method, path string
	held, offline      bool
	head               int   // the registry's status to HEAD
	upErr              error // the upstream fails
	wantStatus         int
	wantBody, wantWord string
	wantNext           bool
}

// linkCases ask for the blob of digest d.
func linkCases(d string) []linkCase {
	return []linkCase{
		{name: "hit, a range", method: "GET", path: "/v2/team/app/blobs/" + d, held: true, head: 200, wantStatus: 206, wantBody: "laye", wantWord: "hit"},
		{name: "miss with a range: the registry answers it, the store fills", method: "GET", path: "/v2/team/app/blobs/" + d, head: 200, wantStatus: 200, wantBody: "next", wantWord: "miss", wantNext: true},
		{name: "registry refuses", method: "GET", path: "/v2/team/app/blobs/" + d, held: true, head: 401, wantStatus: 200, wantBody: "next", wantWord: "miss", wantNext: true},
		{name: "no upstream", method: "GET", path: "/v2/team/app/blobs/" + d, held: true, upErr: oci.ErrNoUpstream, wantStatus: 503, wantBody: `"code":"UNAVAILABLE"`, wantWord: "miss"},
		{name: "offline", method: "GET", path: "/v2/team/app/blobs/" + d, held: true, offline: true, upErr: oci.ErrNoUpstream, wantStatus: 206, wantBody: "laye", wantWord: "offline"},
		{name: "not cacheable", method: "PUT", path: "/v2/team/app/blobs/" + d, held: true, head: 200, wantStatus: 200, wantBody: "next", wantNext: true},
	}
}

// TestLinkWithHTTPTestAlone: the cache link, given a next handler, an
// upstream RoundTripper and a Store of this package's terms, answers
// from the store after the registry's HEAD, fills on a miss, hands
// what it does not serve to next, and reports its word and failures in
// the request's annotation; its own requests carry the node's
// Authorization and none of its Range or hop-by-hop headers.
func TestLinkWithHTTPTestAlone(t *testing.T) {
	content := []byte("layer bytes")
	sum := sha256.Sum256(content)
	d := "sha256:" + hex.EncodeToString(sum[:])
	tests := linkCases(d)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memStore{content: map[string][]byte{}}
			if tt.held {
				store.content[d] = content
			}
			upstream := linkUpstream(t, content, tt.head, tt.upErr)
			nextCalled := false
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				nextCalled = true
				_, _ = io.WriteString(w, "next")
			})
			c, err := New(Config{Route: "registry", Store: store, Offline: tt.offline})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(tt.method, "https://registry.example.com"+tt.path, nil)
			r.Header.Set("Authorization", "Bearer t")
			r.Header.Set("Range", "bytes=0-3")
			r.Header.Set("Te", "trailers")
			ann := oci.NewAnnotation(oci.ParseURL(r.URL))
			r = r.WithContext(oci.WithAnnotation(r.Context(), ann))
			rec := httptest.NewRecorder()
			c.Wrap(next, upstream).ServeHTTP(rec, r)
			facts := ann.Facts()
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) || nextCalled != tt.wantNext || facts.Cache != tt.wantWord {
				t.Errorf("got %d %q next=%v word %q, want %d %q next=%v word %q",
					rec.Code, rec.Body, nextCalled, facts.Cache, tt.wantStatus, tt.wantBody, tt.wantNext, tt.wantWord)
			}
			if (tt.upErr != nil && !tt.offline) != (facts.Err != nil) {
				t.Errorf("annotation error %v", facts.Err)
			}
			if !tt.held && tt.head == 200 && !bytes.Equal(store.content[d], content) {
				t.Errorf("the miss did not fill the store")
			}
		})
	}
}

// linkUpstream is the cache link's upstream: a registry answering HEAD
// with head and GET with content, checking the headers the link sends,
// or upErr for every request when not nil.
func linkUpstream(t *testing.T, content []byte, head int, upErr error) roundTripFunc {
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" || r.Header.Get("Range") != "" || r.Header.Get("Te") != "" {
			t.Errorf("the cache's %s carried %v", r.Method, r.Header)
		}
		if r.Method == http.MethodHead {
			w.WriteHeader(head)
			return
		}
		_, _ = w.Write(content)
	}))
	t.Cleanup(reg.Close)
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if upErr != nil {
			return nil, fmt.Errorf("route registry: %w", upErr)
		}
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host = "http", reg.Listener.Addr().String()
		return http.DefaultTransport.RoundTrip(out)
	})
}
