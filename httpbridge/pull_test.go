package httpbridge

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snigate/snigate/internal/memregistry"
	"github.com/snigate/snigate/oci"
)

// seen records the requests an upstream received.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *seen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *seen) all() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// newRegistry starts go-containerregistry's registry behind mTLS with the
// given ALPN protocols and pushes an image to team/app:v1 straight to
// it; it returns the upstream, the requests it sees after the push, and
// the image's digest.
func newRegistry(tb testing.TB, p *testPKI, protos ...string) (*testUpstream, *seen, string) {
	tb.Helper()
	s := &seen{}
	var pushed sync.WaitGroup
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	recording := false
	var mu sync.Mutex
	u := startUpstream(tb, p.upstreamTLS(protos...), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		rec := recording
		mu.Unlock()
		if rec {
			s.wrap(reg).ServeHTTP(w, r)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	pushed.Add(1)
	edge := memregistry.NewTransport(p.edgeTLS(), func(ctx context.Context, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "tcp", u.addr)
	})
	defer edge.CloseIdleConnections()
	digest, err := memregistry.PushImage(context.Background(), name.MustParseReference(registryName+"/team/app:v1"), edge)
	if err != nil {
		tb.Fatal(err)
	}
	mu.Lock()
	recording = true
	mu.Unlock()
	return u, s, digest.String()
}

// TestPullThroughBridge pulls an image through an http route, node leg
// and upstream leg each in HTTP/2 and HTTP/1.1 (upstream_protocol h2
// against a registry that offers h2 or not; the default, auto, is
// HTTP/1.1), and checks the digest computed from the bytes, the
// protocols and the forwarded headers.
func TestPullThroughBridge(t *testing.T) {
	tests := []struct {
		name, node, protocol, upstream string
		upProtos                       []string
	}{
		{name: "h2 node, h2 registry", node: "h2", protocol: UpstreamH2, upstream: "HTTP/2.0", upProtos: []string{"h2", "http/1.1"}},
		{name: "h1 node, h2 registry", node: "http/1.1", protocol: UpstreamH2, upstream: "HTTP/2.0", upProtos: []string{"h2", "http/1.1"}},
		{name: "h2 node, h1 registry", node: "h2", protocol: UpstreamH2, upstream: "HTTP/1.1", upProtos: []string{"http/1.1"}},
		{name: "h1 node, h1 registry", node: "http/1.1", protocol: UpstreamH2, upstream: "HTTP/1.1", upProtos: []string{"http/1.1"}},
		{name: "h2 node, h2 registry, default", node: "h2", upstream: "HTTP/1.1", upProtos: []string{"h2", "http/1.1"}},
		{name: "h1 node, h2 registry, http1", node: "http/1.1", protocol: UpstreamHTTP1, upstream: "HTTP/1.1", upProtos: []string{"h2", "http/1.1"}},
		{name: "h2 node, h1 registry, auto", node: "h2", protocol: UpstreamAuto, upstream: "HTTP/1.1", upProtos: []string{"http/1.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPKI(t)
			up, seen, want := newRegistry(t, p, tt.upProtos...)
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Forwarded: true, UpstreamProtocol: tt.protocol}})
			node := w.node(t, tt.node)
			got, err := memregistry.PullImage(context.Background(), name.MustParseReference(registryName+"/team/app:v1"), node.Transport)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != want {
				t.Errorf("pulled digest %s, pushed %s", got, want)
			}
			reqs := seen.all()
			if len(reqs) < 4 {
				t.Fatalf("registry saw %d requests, want a pull's (base, manifest, config, layers)", len(reqs))
			}
			for _, r := range reqs {
				if r.Proto != tt.upstream || r.Host != registryName || r.Header.Get("X-Forwarded-For") != "127.0.0.1" {
					t.Errorf("%s %s: proto %s host %q X-Forwarded-For %q, want %s, %q, 127.0.0.1",
						r.Method, r.URL.Path, r.Proto, r.Host, r.Header.Get("X-Forwarded-For"), tt.upstream, registryName)
				}
			}
			if n := testutil.ToFloat64(w.m.requests.WithLabelValues("registry", "blob", "200")); n < 1 {
				t.Errorf("requests_total{kind=blob,code=200} = %v", n)
			}
			if n := testutil.CollectAndCount(w.m.duration); n < 3 {
				t.Errorf("duration histogram has %d series, want base, manifest and blob", n)
			}
			for _, rec := range w.audit.wait(t, len(reqs)) {
				if rec.Client == "" || rec.Upstream != up.addr || rec.Status != 200 && rec.Status != 401 || rec.Kind == oci.KindBlob && rec.Digest == "" {
					t.Errorf("audit %+v", rec)
				}
			}
			node.CloseIdleConnections()
			w.logs.Wait(t, "route=registry", "result=ok")
		})
	}
}
