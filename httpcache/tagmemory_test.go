package httpcache

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snigate/snigate/oci"
)

// manifestOf is an OCI image manifest naming config and layer.
func manifestOf(config, layer string) []byte {
	return []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",` +
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` + config + `","size":2},` +
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"` + layer + `","size":3}]}`)
}

// TestTagAnsweredFromMemoryOffline: with offline and tags, a tag the
// registry answered is answered with its last digest once no upstream
// answers, within tags of its last confirmation (counted offline,
// logged with the tag); older than tags it gets 503 saying so, and a
// tag never answered 503 as before. Before tags were remembered, every
// tag got 503 with the registry down.
func TestTagAnsweredFromMemoryOffline(t *testing.T) {
	var clock atomic.Int64
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	clock.Store(start.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	w := newWorld(t, worldOpts{offline: true, tags: 24 * time.Hour, now: now})
	m := manifestOf(w.up.push(t, []byte("{}")), w.up.push(t, []byte("abc")))
	d := w.up.pushManifest(t, "v1", m)
	c := w.node(t, "h2")
	if status, body, _, err := get(c, "/v2/team/app/manifests/v1"); err != nil || status != 200 || !bytes.Equal(body, m) {
		t.Fatalf("tag while the registry is up: %d %q %v", status, body, err)
	}
	w.up.stop()
	tests := []struct {
		name       string
		path       string
		after      time.Duration // since the confirmation
		wantStatus int
		wantBody   string
	}{
		{name: "within tags", path: "/v2/team/app/manifests/v1", after: 23 * time.Hour, wantStatus: 200, wantBody: string(m)},
		{name: "older than tags", path: "/v2/team/app/manifests/v1", after: 25 * time.Hour, wantStatus: 503, wantBody: "was last confirmed by the registry 25h0m0s ago"},
		{name: "never answered", path: "/v2/team/app/manifests/v2", after: time.Hour, wantStatus: 503, wantBody: "remembers no digest for the tag team/app:v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock.Store(start.Add(tt.after).UnixNano())
			status, body, h, err := get(c, tt.path)
			if err != nil || status != tt.wantStatus || !strings.Contains(string(body), tt.wantBody) {
				t.Fatalf("got %d %q %v, want %d %q", status, body, err, tt.wantStatus, tt.wantBody)
			}
			if status == 200 && h.Get("Docker-Content-Digest") != d {
				t.Errorf("Docker-Content-Digest %q, want %s", h.Get("Docker-Content-Digest"), d)
			}
		})
	}
	if s := w.store.Stats(); s.Offline != 1 {
		t.Errorf("offline count %d, want 1", s.Offline)
	}
	if !strings.Contains(w.logs.String(), "reference=v1") {
		t.Errorf("no log line naming the tag; log:\n%s", w.logs)
	}
	if got, _ := w.store.LookupTag("team/app", "v1"); !got.Confirmed.Equal(start) {
		t.Errorf("answering from memory moved the confirmation to %s, want %s", got.Confirmed, start)
	}
}

// memTags is a memStore that remembers tags.
type memTags struct {
	*memStore
	mu   sync.Mutex
	tags map[string]string
	at   time.Time
}

func (s *memTags) RememberTag(repo, tag, digest string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tags[repo+":"+tag], s.at = digest, at
	return nil
}

func (s *memTags) LookupTag(repo, tag string) (string, time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.tags[repo+":"+tag]
	return d, s.at, ok
}

// TestTagFromMemoryAnnotated: a tag answered from memory is the audit's
// "cache":"offline" with the digest and no error (the audit's reference
// is the request's path: the tag); a HEAD by tag from the registry is remembered.
func TestTagFromMemoryAnnotated(t *testing.T) {
	m := manifestOf("sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64))
	d := digestOf(m)
	store := &memTags{memStore: &memStore{content: map[string][]byte{d: m}}, tags: map[string]string{}}
	up := true
	upstream := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !up {
			return nil, oci.ErrNoUpstream
		}
		rec := httptest.NewRecorder()
		rec.Header().Set("Docker-Content-Digest", d)
		rec.WriteHeader(200)
		return rec.Result(), nil
	})
	c, err := New(Config{Route: "registry", Store: store, Offline: true, Tags: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method string) (*httptest.ResponseRecorder, oci.Facts) {
		r := httptest.NewRequest(method, "https://registry.example.com/v2/team/app/manifests/v1", nil)
		ann := oci.NewAnnotation(oci.ParseURL(r.URL))
		r = r.WithContext(oci.WithAnnotation(context.Background(), ann))
		rec := httptest.NewRecorder()
		c.Wrap(http.NotFoundHandler(), upstream).ServeHTTP(rec, r)
		return rec, ann.Facts()
	}
	if rec, _ := serve(http.MethodHead); rec.Code != 200 || store.tags["team/app:v1"] != d {
		t.Fatalf("HEAD by tag: %d, remembered %q; want 200 and %s", rec.Code, store.tags["team/app:v1"], d)
	}
	up = false
	rec, facts := serve(http.MethodGet)
	if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), m) || facts.Cache != "offline" || facts.Digest != d || facts.Err != nil {
		t.Fatalf("GET by tag offline: %d %q, facts %+v", rec.Code, rec.Body, facts)
	}
}

// TestTagConfirmedByEveryRegistryAnswer: each answer of the registry to a
// manifest by tag moves the tag's confirmation, a pull whose manifest the
// cache serves after the registry's answer as well as one the registry
// serves, so that tags counts from the registry's last word.
func TestTagConfirmedByEveryRegistryAnswer(t *testing.T) {
	var clock atomic.Int64
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	clock.Store(start.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	w := newWorld(t, worldOpts{tags: 24 * time.Hour, now: now})
	m := manifestOf(w.up.push(t, []byte("{}")), w.up.push(t, []byte("abc")))
	d := w.up.pushManifest(t, "v1", m)
	c := w.node(t, "h2")
	for i, after := range []time.Duration{0, time.Hour, 2 * time.Hour} {
		clock.Store(start.Add(after).UnixNano())
		if status, body, _, err := get(c, "/v2/team/app/manifests/v1"); err != nil || status != 200 || !bytes.Equal(body, m) {
			t.Fatalf("pull %d: %d %q %v", i, status, body, err)
		}
		if got, ok := w.store.LookupTag("team/app", "v1"); !ok || got.Digest != d || !got.Confirmed.Equal(start.Add(after)) {
			t.Fatalf("after pull %d: remembered %+v %v; want %s confirmed at %s", i, got, ok, d, start.Add(after))
		}
	}
}
