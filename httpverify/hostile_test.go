package httpverify

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// proxyTo is a next link forwarding to a real server, as the bridge's
// proxy does.
func proxyTo(t *testing.T, h http.Handler) http.Handler {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return httputil.NewSingleHostReverseProxy(u)
}

// TestHostileReferrersAreBounded: a registry (a real server on
// loopback) lists 1000 signature referrers of an unsigned image, each a
// manifest of 1000 signed layers whose payloads never end; 20 nodes pull
// it while 5 pull a signed image. The hostile pulls are refused having
// read at most MaxSignatures referrer manifests each and no payload past
// MaxPayload; the signed pulls succeed.
func TestHostileReferrersAreBounded(t *testing.T) {
	w := newWorld(t, Config{})
	signed := w.reg.pushImage(t, "team/app", "v1", "good")
	w.reg.signTag(t, w.good, "team/app", signed, nil, false)
	evil := w.reg.pushImage(t, "team/app", "evil", "evil")
	hostile := newHostileReferrers(evil, signed, w.reg)
	w.h = w.v.Wrap(proxyTo(t, hostile), nil)

	for _, c := range pullEvilAndSigned(t, w, evil, signed) {
		t.Error(c)
	}
	if n := hostile.manifestReads.Load(); n > 20*MaxSignatures {
		t.Errorf("%d referrer manifests read for 20 refused pulls, want at most %d", n, 20*MaxSignatures)
	}
	if n := hostile.payloadReads.Load(); n > 20*MaxSignatures {
		t.Errorf("%d signature payloads read for 20 refused pulls, want at most %d", n, 20*MaxSignatures)
	}
}

// hostileReferrers lists MaxDescriptors signature referrers of the image
// evil, each a manifest of 1000 signed layers whose payloads run far past
// MaxPayload, and counts the reads of both; next serves the rest.
type hostileReferrers struct {
	evil, signed  string
	index         string // the referrers of evil
	sigManifest   string // every referrer
	next          http.Handler
	manifestReads atomic.Int64
	payloadReads  atomic.Int64
}

func newHostileReferrers(evil, signed string, next http.Handler) *hostileReferrers {
	var layers []string
	for i := range 1000 {
		layers = append(layers, fmt.Sprintf(`{"mediaType":"x","digest":"sha256:%064x","size":1,"annotations":{%q:"AAAA"}}`, i, annotationSignature))
	}
	var refs []string
	for i := range MaxDescriptors {
		refs = append(refs, fmt.Sprintf(`{"mediaType":%q,"digest":"sha256:%064x","size":1,"artifactType":%q}`, mtManifest, 1<<20+i, ArtifactCosign))
	}
	return &hostileReferrers{
		evil: evil, signed: signed, next: next,
		index:       `{"schemaVersion":2,"manifests":[` + strings.Join(refs, ",") + `]}`,
		sigManifest: `{"schemaVersion":2,"layers":[` + strings.Join(layers, ",") + `]}`,
	}
}

func (h *hostileReferrers) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/v2/team/app/referrers/"+h.evil:
		_, _ = rw.Write([]byte(h.index))
	case strings.HasPrefix(p, "/v2/team/app/manifests/sha256:") && p != "/v2/team/app/manifests/"+h.evil && p != "/v2/team/app/manifests/"+h.signed:
		h.manifestReads.Add(1)
		_, _ = rw.Write([]byte(h.sigManifest))
	case strings.HasPrefix(p, "/v2/team/app/blobs/sha256:0000"):
		h.payloadReads.Add(1)
		chunk := make([]byte, 32<<10)
		for range 64 { // 2 MiB: far past MaxPayload
			if _, err := rw.Write(chunk); err != nil {
				return
			}
		}
	default:
		h.next.ServeHTTP(rw, r)
	}
}

// pullEvilAndSigned pulls evil's manifest from 20 nodes and signed's from
// 5, all at once, and returns the answers that were not 403 and 200.
func pullEvilAndSigned(t *testing.T, w *world, evil, signed string) []string {
	var wg sync.WaitGroup
	codes := make(chan string, 25)
	for i := range 25 {
		path, want := "/v2/team/app/manifests/"+evil, http.StatusForbidden
		if i%5 == 0 {
			path, want = "/v2/team/app/manifests/"+signed, http.StatusOK
		}
		wg.Go(func() {
			if rec, _ := w.get(t, http.MethodGet, path); rec.Code != want {
				codes <- fmt.Sprintf("%s: %d, want %d", path, rec.Code, want)
			}
		})
	}
	wg.Wait()
	close(codes)
	var out []string
	for c := range codes {
		out = append(out, c)
	}
	return out
}

// TestConcurrentPullsCheckSignaturesOnce: 20 nodes pulling a new image at
// the same moment read its signature once; the others wait for that
// decision.
func TestConcurrentPullsCheckSignaturesOnce(t *testing.T) {
	w := newWorld(t, Config{})
	d := w.reg.pushImage(t, "team/app", "v1", "a")
	w.reg.signTag(t, w.good, "team/app", d, nil, false)
	sigTag := "/v2/team/app/manifests/" + tagOf(d) + ".sig"
	const nodes = 20
	release := make(chan struct{})
	var once sync.Once
	var waiting, arrived atomic.Int32
	done := func(n int32) {
		if n == nodes-1 || n == nodes {
			once.Do(func() { close(release) })
		}
	}
	w.v.checking.waitFunc = func() { done(waiting.Add(1)) }
	slow := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == sigTag {
			done(arrived.Add(1)) // without the lock every node arrives here
			<-release
		}
		w.reg.ServeHTTP(rw, r)
	})
	w.h = w.v.Wrap(slow, nil)
	var wg sync.WaitGroup
	for range nodes {
		wg.Go(func() {
			if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d); rec.Code != http.StatusOK {
				t.Errorf("pull: %d %s", rec.Code, rec.Body)
			}
		})
	}
	wg.Wait()
	if n := w.reg.count(sigTag); n != 1 {
		t.Errorf("the signature tag was read %d times by %d concurrent pulls, want once", n, nodes)
	}
}

// TestManifestTooLargeToVerify: a manifest answer past MaxManifest, from
// a real server through a reverse proxy (which aborts its copy), is a
// clear 403, not an aborted answer.
func TestManifestTooLargeToVerify(t *testing.T) {
	w := newWorld(t, Config{})
	huge := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", mtManifest)
		chunk := make([]byte, 64<<10)
		for range MaxManifest/len(chunk) + 2 {
			if _, err := rw.Write(chunk); err != nil {
				return
			}
		}
	})
	h := w.v.Wrap(proxyTo(t, huge), nil)
	// As in a server (the proxy panics with http.ErrAbortHandler on a
	// failed copy only there).
	w.h = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), http.ServerContextKey, &http.Server{})))
	})
	rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/v1")
	denied(t, rec, "larger than")
	if facts.Signature != ResultError {
		t.Fatalf("signature %q, want %q", facts.Signature, ResultError)
	}
}
