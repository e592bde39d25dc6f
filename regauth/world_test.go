package regauth

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snigate/snigate/internal/memregistry"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/internal/testkit/distribution"
)

const (
	testRoute    = "registry"
	testUser     = "robot"
	testPassword = "first-Passw0rd"
)

// world is a docker-registry with an auth section, the test PKI, and
// what a Transport in front of it needs.
type world struct {
	p       *testPKI
	reg     *distribution.Registry
	ts      *distribution.TokenService // nil for an htpasswd registry
	pwFile  string
	metrics *Metrics
	logs    *testkit.LogSink
}

// newTokenWorld is docker-registry with auth: token and a token service
// that knows robot.
func newTokenWorld(t *testing.T) *world {
	t.Helper()
	return newTokenWorldWith(t, distribution.TokenOptions{})
}

// newTokenWorldWith is newTokenWorld with a token service of o's options
// (NoOAuth, RefreshTokens, ExpiresIn).
func newTokenWorldWith(t *testing.T, o distribution.TokenOptions) *world {
	t.Helper()
	p := newTestPKI(t)
	ts := startTokenService(t, p, o)
	ts.SetUser(testUser, testPassword)
	w := &world{p: p, ts: ts, metrics: NewMetrics(nil), logs: testkit.NewLogSink()}
	w.reg = startRegistry(t, p, distribution.Options{Token: ts})
	w.pwFile = filepath.Join(t.TempDir(), "password")
	writeFile(t, w.pwFile, testPassword+"\n")
	return w
}

// newBasicWorld is docker-registry with htpasswd (Basic) auth.
func newBasicWorld(t *testing.T) *world {
	t.Helper()
	p := newTestPKI(t)
	dir := t.TempDir()
	w := &world{p: p, metrics: NewMetrics(nil), logs: testkit.NewLogSink()}
	w.reg = startRegistry(t, p, distribution.Options{Htpasswd: map[string]string{testUser: testPassword}, HtpasswdRealm: "regauth-basic"})
	w.pwFile = filepath.Join(dir, "password")
	writeFile(t, w.pwFile, testPassword+"\n")
	return w
}

// transport is a Transport for the world's registry with src (nil: the
// password file), writing allowed when write is set.
func (w *world) transport(t *testing.T, src Source, write bool) *Transport {
	t.Helper()
	if src == nil {
		src = NewPasswordFile(testUser, w.pwFile)
	}
	rt, err := New(w.p.transport(t), Config{
		Route: testRoute, Host: w.reg.Addr, Source: src, TokenTransport: w.p.transport(t),
		WriteAllowedFunc: func(*http.Request) bool { return write },
		Metrics:          w.metrics, Logger: slog.New(slog.NewTextHandler(w.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// push writes a random image to repo:v1 with the test's credentials,
// not through a Transport, and returns its digest.
func (w *world) push(t *testing.T, repo string) v1.Hash {
	t.Helper()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref := w.ref(t, repo)
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: testUser, Password: testPassword}),
		remote.WithTransport(w.p.transport(t)), remote.WithContext(testContext(t))); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pull reads repo:v1 through rt (anonymously as far as go-containerregistry
// knows) and returns its digest, after reading every layer.
func (w *world) pull(t *testing.T, rt http.RoundTripper, repo string) (v1.Hash, error) {
	t.Helper()
	return memregistry.PullImage(testContext(t), w.ref(t, repo), rt)
}

func (w *world) ref(t *testing.T, repo string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(w.reg.Addr + "/" + repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// get sends GET path through rt with the node's Authorization (if any).
func (w *world) get(t *testing.T, rt http.RoundTripper, path, nodeAuth string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, "https://"+w.reg.Addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json")
	if nodeAuth != "" {
		req.Header.Set("Authorization", nodeAuth)
	}
	resp, err := rt.RoundTrip(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

// mustGet200 fails unless GET path through rt answers 200.
func (w *world) mustGet200(t *testing.T, rt http.RoundTripper, path, nodeAuth string) {
	t.Helper()
	resp, err := w.get(t, rt, path, nodeAuth)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
}

// tokens is the value of snigate_http_auth_tokens_total for result.
func (w *world) tokens(result string) int {
	return int(testutil.ToFloat64(w.metrics.tokens.WithLabelValues(testRoute, result)))
}

// ageTokens moves every cached token d closer to its expiry: time passing
// for the cache, without waiting for it.
func ageTokens(rt *Transport, d time.Duration) {
	c := rt.tokens
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		e.tok.Renew, e.tok.Expires = e.tok.Renew.Add(-d), e.tok.Expires.Add(-d)
	}
}

// testContext is a context that ends with the test, bounded by
// startLimit per operation's failure.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 4*startLimit)
	t.Cleanup(cancel)
	return ctx
}
