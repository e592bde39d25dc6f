package httpcache

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestFillFollowsRedirectToStorage: a registry that redirects blobs to
// another host (blob storage): the HEAD and the fill follow the redirect
// through the route's client, the node gets the bytes, and storage sees
// one GET for two pulls.
func TestFillFollowsRedirectToStorage(t *testing.T) {
	w := newWorld(t, worldOpts{redirectRoots: true})
	content := randomBytes(t, 512<<10)
	d := w.up.push(t, content)
	var mu sync.Mutex
	storageGets := 0
	storage := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("storage got the node's Authorization")
		}
		if r.Method == http.MethodGet {
			mu.Lock()
			storageGets++
			mu.Unlock()
		}
		http.ServeContent(rw, r, "", time.Time{}, bytes.NewReader(content))
	}))
	storage.TLS = &tls.Config{Certificates: []tls.Certificate{w.leaf(t, "storage", "127.0.0.1")}}
	storage.StartTLS()
	defer storage.Close()
	w.up.set(func(f *fakeRegistry) { f.redirect = storage.URL })
	for range 2 {
		status, body, _, err := get(w.node(t, "h2"), blobPath(d), "Authorization", "Bearer node")
		if err != nil || status != http.StatusOK || !bytes.Equal(body, content) {
			t.Fatalf("GET through the redirect: %d, %d bytes, %v", status, len(body), err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if storageGets != 1 {
		t.Errorf("storage saw %d GETs, want 1 (the fill)", storageGets)
	}
	if n := w.up.count(http.MethodGet, blobPath(d)); n != 1 {
		t.Errorf("registry saw %d GETs, want 1 (redirected once)", n)
	}
}
