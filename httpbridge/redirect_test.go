package httpbridge

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/snigate/snigate/internal/memregistry"
	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/oci"
)

// storageWorld is a registry whose blob GETs redirect to a storage host
// with its own CA, reachable only from the gateway (the node's DNS sends
// every name to the gateway, which has no route for storage.test).
type storageWorld struct {
	*world
	digest string
	mu     sync.Mutex
	hits   int
	leaks  []string // what the storage host should never have seen
}

const storageHost = "storage.test"

func newStorageWorld(t *testing.T, redirects string, loop bool) *storageWorld {
	t.Helper()
	p := newTestPKI(t)
	sw := &storageWorld{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	storageCA, err := pki.NewAuthority("storage CA")
	if err != nil {
		t.Fatal(err)
	}
	storageCert, _, _, err := storageCA.Leaf("storage", storageHost)
	if err != nil {
		t.Fatal(err)
	}
	storage := startUpstream(t, &tls.Config{Certificates: []tls.Certificate{storageCert}, ClientAuth: tls.RequestClientCert, NextProtos: []string{"h2"}},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sw.serveStorage(w, r, reg, loop) }))
	up := startUpstream(t, p.upstreamTLS("h2"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
			w.Header().Set("Docker-Content-Digest", r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
			http.Redirect(w, r, "https://"+storageHost+r.URL.Path+"?X-Amz-Signature=secret", http.StatusTemporaryRedirect)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	edge := memregistry.NewTransport(p.edgeTLS(), func(ctx context.Context, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "tcp", up.addr)
	})
	defer edge.CloseIdleConnections()
	d, err := memregistry.PushImage(context.Background(), name.MustParseReference(registryName+"/team/app:v1"), edge)
	if err != nil {
		t.Fatal(err)
	}
	sw.digest = d.String()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == storageHost+":443" {
			addr = storage.addr
		}
		return new(net.Dialer).DialContext(ctx, network, addr)
	}
	sw.world = newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{
		Redirects: redirects, RedirectRoots: storageCA.Pool(), DialContext: dial,
		RedirectAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}) // storage.test is on loopback
	return sw
}

func (sw *storageWorld) serveStorage(w http.ResponseWriter, r *http.Request, reg http.Handler, loop bool) {
	sw.mu.Lock()
	sw.hits++
	if a := r.Header.Get("Authorization"); a != "" {
		sw.leaks = append(sw.leaks, "Authorization: "+a)
	}
	if len(r.TLS.PeerCertificates) > 0 {
		sw.leaks = append(sw.leaks, "a client certificate")
	}
	if r.URL.Query().Get("X-Amz-Signature") != "secret" {
		sw.leaks = append(sw.leaks, "lost the presigned query")
	}
	sw.mu.Unlock()
	if loop {
		http.Redirect(w, r, r.URL.String(), http.StatusFound)
		return
	}
	reg.ServeHTTP(w, r)
}

// TestRedirectFollow: with redirects: follow a node that cannot reach the
// storage host pulls anyway; the storage host sees no Authorization and
// no client certificate, and the registry's digest header survives.
func TestRedirectFollow(t *testing.T) {
	sw := newStorageWorld(t, RedirectsFollow, false)
	node := sw.node(t, "h2")
	auth := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer node-token")
		return node.Transport.RoundTrip(r)
	})
	got, err := memregistry.PullImage(context.Background(), name.MustParseReference(registryName+"/team/app:v1"), auth)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != sw.digest {
		t.Errorf("pulled %s, pushed %s", got, sw.digest)
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.hits < 2 || len(sw.leaks) > 0 {
		t.Errorf("storage hits %d (want the config and layers), saw %v", sw.hits, sw.leaks)
	}
	if n := counter(t, sw.m.redirects.WithLabelValues("registry", RedirectFollowed)); n != float64(sw.hits) {
		t.Errorf("redirects followed = %v, want %d", n, sw.hits)
	}
}

// TestRedirectPass: with redirects: pass the node gets the registry's
// redirect as it is.
func TestRedirectPass(t *testing.T) {
	sw := newStorageWorld(t, RedirectsPass, false)
	resp, _ := do(t, sw.node(t, "http/1.1"), "GET", "/v2/team/app/blobs/"+dgst, nil)
	if resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(resp.Header.Get("Location"), "https://"+storageHost+"/") {
		t.Errorf("got %d Location %q, want the registry's 307 to the storage host", resp.StatusCode, resp.Header.Get("Location"))
	}
	if sw.hits != 0 {
		t.Errorf("the gateway fetched from storage %d times with redirects: pass", sw.hits)
	}
}

// TestRedirectLoop: at most MaxRedirects hops, then 502 in generic words;
// the log says why, without the presigned query.
func TestRedirectLoop(t *testing.T) {
	sw := newStorageWorld(t, RedirectsFollow, true)
	resp, body := do(t, sw.node(t, "h2"), "GET", "/v2/team/app/blobs/"+dgst, nil)
	if resp.StatusCode != 502 || !strings.Contains(body, oci.RedirectFailedMessage) {
		t.Errorf("got %d %s, want 502 saying the redirect could not be followed", resp.StatusCode, body)
	}
	if line := sw.logs.Wait(t, "following the registry's redirect failed", "more than 5 redirects"); strings.Contains(line, "secret") {
		t.Errorf("the log has the presigned query: %s", line)
	}
	if sw.hits != MaxRedirects {
		t.Errorf("storage hit %d times, want %d", sw.hits, MaxRedirects)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
