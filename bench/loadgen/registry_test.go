package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// testBigSize is the large blob of the tests: several patterns and a
// partial one, so reads cross the pattern's end.
const testBigSize = 3*patternSize + 12345

// testLayerSize is the cache scenarios' layer in the tests.
const testLayerSize = 2*patternSize + 777

func TestPatternBlobReadAt(t *testing.T) {
	pb := newPatternBlob(testBigSize, 1)
	whole, err := io.ReadAll(pb.reader())
	if err != nil || int64(len(whole)) != pb.size {
		t.Fatalf("ReadAll: %d bytes, %v; want %d", len(whole), err, pb.size)
	}
	tests := []struct {
		name    string
		off     int64
		n       int
		want    int
		wantEOF bool
	}{
		{name: "start", off: 0, n: 100, want: 100},
		{name: "across the pattern's end", off: patternSize - 10, n: 20, want: 20},
		{name: "larger than the pattern", off: 7, n: 2*patternSize + 3, want: 2*patternSize + 3},
		{name: "short at the end", off: testBigSize - 5, n: 10, want: 5, wantEOF: true},
		{name: "past the end", off: testBigSize, n: 10, want: 0, wantEOF: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, tt.n)
			n, err := pb.ReadAt(b, tt.off)
			if n != tt.want || (err == io.EOF) != tt.wantEOF {
				t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d, EOF %v", tt.n, tt.off, n, err, tt.want, tt.wantEOF)
			}
			if !bytes.Equal(b[:n], whole[tt.off:tt.off+int64(n)]) {
				t.Errorf("ReadAt at %d: other bytes than a sequential read", tt.off)
			}
		})
	}
	if got := pb.digest(); got != digestOf(whole) {
		t.Errorf("digest %s, want the digest of the bytes read, %s", got, digestOf(whole))
	}
}

func TestParseAPIPath(t *testing.T) {
	tests := []struct {
		name, path, repo, kind, ref string
		ok                          bool
	}{
		{name: "manifest by tag", path: "/v2/bench/app/manifests/latest", repo: "bench/app", kind: "manifests", ref: "latest", ok: true},
		{name: "one segment", path: "/v2/app/blobs/sha256:ab", repo: "app", kind: "blobs", ref: "sha256:ab", ok: true},
		{name: "deep name", path: "/v2/a/b/c/manifests/v1", repo: "a/b/c", kind: "manifests", ref: "v1", ok: true},
		{name: "no name", path: "/v2/manifests/v1"},
		{name: "no reference", path: "/v2/app/manifests/"},
		{name: "tags list", path: "/v2/app/tags/list"},
		{name: "not v2", path: "/v1/app/manifests/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, kind, ref, ok := parseAPIPath(tt.path)
			if ok != tt.ok || repo != tt.repo || kind != tt.kind || ref != tt.ref {
				t.Errorf("parseAPIPath(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tt.path, repo, kind, ref, ok, tt.repo, tt.kind, tt.ref, tt.ok)
			}
		})
	}
}

// TestRegistryHandlers calls the registry's handler for each request of a
// pull, and for what it refuses.
func TestRegistryHandlers(t *testing.T) {
	reg := newRegistry(testBigSize)
	m := readManifest(t, reg)
	for _, tt := range registryCases(reg, m.Layers[0]) {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, reg) })
	}
	// Every small layer's bytes match its digest; so do the large blob's.
	for _, l := range append(m.Layers, m.Config) {
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, httptest.NewRequest("GET", blobPath(l.Digest), nil))
		if got := digestOf(rec.Body.Bytes()); got != l.Digest || int64(rec.Body.Len()) != l.Size {
			t.Errorf("blob %s: %d bytes of digest %s, want %d", l.Digest, rec.Body.Len(), got, l.Size)
		}
	}
}

// readManifest is reg's manifest, checked to hold a config, the small
// layers and the large blob last.
func readManifest(t *testing.T, reg *registry) imageManifest {
	t.Helper()
	var m imageManifest
	if err := json.Unmarshal(reg.manifest, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != smallBlobs || m.Layers[len(m.Layers)-1].Digest != reg.bigDigest || m.Config.MediaType != mediaConfig {
		t.Fatalf("manifest %s: want a config, %d small layers and the large blob last", reg.manifest, smallBlobs-1)
	}
	return m
}

// registryCase is one request to the registry's handler and what it
// must answer.
type registryCase struct {
	name, method, path string
	header             http.Header
	status             int
	wantHeader         http.Header
	wantLen            int64 // body length; -1: not checked
	wantBody           string
}

// registryCases are TestRegistryHandlers' requests to reg, small one of
// its small layers.
func registryCases(reg *registry, small descriptor) []registryCase {
	return []registryCase{
		{name: "base", method: "GET", path: "/v2/", header: http.Header{"X-Forwarded-For": {"10.0.0.1"}}, status: 200,
			wantHeader: http.Header{forwardedEcho: {"10.0.0.1"}, "Docker-Distribution-Api-Version": {"registry/2.0"}}, wantLen: 2, wantBody: "{}"},
		{name: "base HEAD", method: "HEAD", path: "/v2/", status: 200, wantLen: 0},
		{name: "manifest by tag", method: "GET", path: "/v2/bench/app/manifests/latest", status: 200,
			wantHeader: http.Header{"Content-Type": {mediaManifest}, "Docker-Content-Digest": {reg.manifestDigest}},
			wantLen:    int64(len(reg.manifest)), wantBody: string(reg.manifest)},
		{name: "manifest by digest", method: "GET", path: "/v2/other/repo/manifests/" + reg.manifestDigest, status: 200,
			wantHeader: http.Header{"Docker-Content-Digest": {reg.manifestDigest}}, wantLen: int64(len(reg.manifest))},
		{name: "manifest HEAD", method: "HEAD", path: "/v2/bench/app/manifests/latest", status: 200,
			wantHeader: http.Header{"Docker-Content-Digest": {reg.manifestDigest}, "Content-Length": {strconv.Itoa(len(reg.manifest))}}, wantLen: 0},
		{name: "unknown manifest digest", method: "GET", path: "/v2/bench/app/manifests/sha256:00", status: 404, wantLen: -1, wantBody: "MANIFEST_UNKNOWN"},
		{name: "small blob", method: "GET", path: blobPath(small.Digest), status: 200,
			wantHeader: http.Header{"Docker-Content-Digest": {small.Digest}, "Content-Type": {"application/octet-stream"}}, wantLen: smallBlobSize},
		{name: "large blob", method: "GET", path: blobPath(reg.bigDigest), status: 200,
			wantHeader: http.Header{"Content-Length": {strconv.Itoa(testBigSize)}}, wantLen: testBigSize},
		{name: "large blob range", method: "GET", path: blobPath(reg.bigDigest), header: http.Header{"Range": {"bytes=100-199"}}, status: 206, wantLen: 100},
		{name: "unknown blob", method: "GET", path: blobPath("sha256:00"), status: 404, wantLen: -1, wantBody: "BLOB_UNKNOWN"},
		{name: "push refused", method: "PUT", path: "/v2/bench/app/manifests/latest", status: 405,
			wantHeader: http.Header{"Allow": {"GET, HEAD"}}, wantLen: -1, wantBody: "UNSUPPORTED"},
		{name: "other path", method: "GET", path: "/v2/bench/app/tags/list", status: 404, wantLen: -1, wantBody: "NAME_UNKNOWN"},
	}
}

// check sends tt's request to reg and checks the answer.
func (tt registryCase) check(t *testing.T, reg *registry) {
	t.Helper()
	req := httptest.NewRequest(tt.method, tt.path, nil)
	for k, v := range tt.header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	reg.ServeHTTP(rec, req)
	if rec.Code != tt.status {
		t.Fatalf("%s %s: status %d, want %d; body %s", tt.method, tt.path, rec.Code, tt.status, rec.Body)
	}
	for k, v := range tt.wantHeader {
		if got := rec.Header().Get(k); got != v[0] {
			t.Errorf("%s: %q, want %q", k, got, v[0])
		}
	}
	if tt.wantLen >= 0 && int64(rec.Body.Len()) != tt.wantLen {
		t.Errorf("body of %d bytes, want %d", rec.Body.Len(), tt.wantLen)
	}
	if !strings.Contains(rec.Body.String(), tt.wantBody) {
		t.Errorf("body %.200q, want it to contain %q", rec.Body, tt.wantBody)
	}
}
