package httpbridge_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

type serveCert struct{ c tls.Certificate }

func (s serveCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &s.c, nil }

// Example_bridge puts a Bridge on an sni route in front of a registry:
// a pull is forwarded, a push refused with the OCI error DENIED.
func Example_bridge() {
	registry := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "registry: %s %s from %s", r.Method, r.URL.Path, r.Header.Get("X-Forwarded-For"))
	}))
	defer registry.Close()
	roots := registry.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	logger := slog.New(slog.DiscardHandler)
	pool, _ := upstream.New(upstream.Config{Route: "registry", Addrs: []string{registry.Listener.Addr().String()}, Logger: logger})
	bridge, err := httpbridge.New(httpbridge.Config{
		Route: "registry", Upstreams: pool, Forwarded: true, Log: logger,
		UpstreamTLS: func() *tls.Config { return &tls.Config{RootCAs: roots, ServerName: "example.com"} },
	})
	if err != nil {
		panic(err)
	}
	defer bridge.Close()

	// The gateway: a bridge route whose Handler is the bridge.
	ca, _ := pki.NewAuthority("gateway CA")
	cert, _, _, _ := ca.Leaf("gateway", "registry.test")
	table, _ := sni.NewTable([]*sni.Route{{
		Name: "registry", SNI: []string{"registry.test"}, Mode: sni.ModeBridge, Pool: pool,
		Serve: serveCert{cert}, Handler: bridge,
	}}, "")
	srv, _ := sni.New(sni.Config{IdleTimeout: time.Minute, Logger: logger}, table)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// A node whose DNS sends registry.test to the gateway.
	node := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool()},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return new(net.Dialer).DialContext(ctx, network, ln.Addr().String())
		},
	}}
	for _, method := range []string{"GET", "POST"} {
		req, _ := http.NewRequest(method, "https://registry.test/v2/team/app/manifests/v1", nil)
		resp, err := node.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %s %d %s\n", method, resp.Proto, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	node.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(srv.Shutdown(ctx), <-served)
	// Output:
	// GET HTTP/2.0 200 registry: GET /v2/team/app/manifests/v1 from 127.0.0.1
	// POST HTTP/2.0 405 {"errors":[{"code":"DENIED","message":"method POST is not allowed on route \"registry\" (allowed: GET, HEAD): add it to routes[].http.methods to let nodes use it"}]}
	// <nil> sni: server closed
}
