// Package memregistry is an in-memory OCI registry behind an mTLS-only TLS
// server, with push and pull helpers: the private registry of snigate's
// story, for the demo and tests.
package memregistry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is an in-memory OCI registry (go-containerregistry's
// pkg/registry) behind a TLS server that refuses clients without a
// certificate signed by the edge CA: the private registry of the story.
type Registry struct {
	Addr string // host:port on loopback

	srv *http.Server
	wg  sync.WaitGroup
}

// StartRegistry serves an mTLS-only registry on 127.0.0.1:0 with the given
// server certificate, trusting clientCAs for client certificates.
func StartRegistry(server tls.Certificate, clientCAs *x509.CertPool) (*Registry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Registry{Addr: ln.Addr().String()}
	r.srv = &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{server},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    clientCAs,
			NextProtos:   []string{"h2", "http/1.1"},
			MinVersion:   tls.VersionTLS12,
		},
	}
	r.wg.Go(func() { r.serve(ln) })
	return r, nil
}

func (r *Registry) serve(ln net.Listener) {
	if err := r.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("demo registry: %v", err)
	}
}

// Close stops the registry and waits for it.
func (r *Registry) Close() error {
	err := r.srv.Close()
	r.wg.Wait()
	return err
}

// PushImage pushes a small random multi-layer image to ref over transport,
// returning its digest.
func PushImage(ctx context.Context, ref name.Reference, transport http.RoundTripper) (v1.Hash, error) {
	img, err := random.Image(64*1024, 3)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithTransport(transport)); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// PullImage pulls ref over transport, reads every layer, and returns the
// image's digest as computed from the bytes received.
func PullImage(ctx context.Context, ref name.Reference, transport http.RoundTripper) (v1.Hash, error) {
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithTransport(transport))
	if err != nil {
		return v1.Hash{}, err
	}
	layers, err := img.Layers()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return v1.Hash{}, err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return v1.Hash{}, err
		}
	}
	return img.Digest()
}

// NewTransport is an HTTP transport with the given TLS client
// configuration whose dialer decides where each host:port goes: the demo's
// stand-in for DNS pointing the registry name at the gateway.
func NewTransport(tlsConf *tls.Config, dial func(ctx context.Context, hostport string) (net.Conn, error)) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.TLSClientConfig = tlsConf
	t.ForceAttemptHTTP2 = true
	t.DialContext = func(ctx context.Context, _, hostport string) (net.Conn, error) { return dial(ctx, hostport) }
	return t
}
