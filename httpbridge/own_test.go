package httpbridge

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/snigate/snigate/oci"
)

// TestServeOwn: a request of the gateway's own goes through the chain to
// the registry with no node (no audit record), the policy's repository
// allow-list refuses what it would refuse a node, and a chain that
// aborts its answer is ServeOwn's error, not a panic.
func TestServeOwn(t *testing.T) {
	p := newTestPKI(t)
	up := startUpstream(t, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Forwarded-For") != "" {
			t.Errorf("own request carried X-Forwarded-For %q", r.Header.Get("X-Forwarded-For"))
		}
		_, _ = io.WriteString(w, "manifest of "+r.URL.Path)
	}))
	abort := false
	chain := func(next http.Handler, _ http.RoundTripper) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if abort {
				oci.AnnotationFrom(r.Context()).Fail(errors.New("fill broke"), true)
				panic(http.ErrAbortHandler)
			}
			next.ServeHTTP(w, r)
		})
	}
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Chain: chain, Forwarded: true, Repositories: []string{"team/*"}}})
	tests := []struct {
		name, method, path string
		abort              bool
		wantErr            string
		wantBody           string
	}{
		{name: "through the chain", method: "GET", path: "/v2/team/app/manifests/v1", wantBody: "manifest of /v2/team/app/manifests/v1"},
		{name: "outside repositories", method: "GET", path: "/v2/other/app/manifests/v1", wantErr: "outside http.repositories"},
		{name: "not a read", method: "DELETE", path: "/v2/team/app/manifests/v1", wantErr: "refused by the route's policy"},
		{name: "aborted", method: "GET", path: "/v2/team/app/blobs/sha256:" + strings.Repeat("a", 64), abort: true, wantErr: "fill broke"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			abort = tt.abort
			r := httptest.NewRequest(tt.method, "https://"+registryName+tt.path, nil)
			rec := httptest.NewRecorder()
			err := w.bridge.ServeOwn(rec, r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || rec.Code != 200 || rec.Body.String() != tt.wantBody {
				t.Fatalf("got %d %q %v, want 200 %q", rec.Code, rec.Body, err, tt.wantBody)
			}
		})
	}
	if n := len(w.audit.sink.lines()); n != 0 {
		t.Errorf("%d audit records for own requests, want none", n)
	}
}
