package sni_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// Example_server routes an HTTPS request for example.com through a
// splice route to a TLS server, then shuts the gateway down.
func Example_server() {
	// The upstream: an HTTPS server whose certificate covers example.com.
	registry := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s over %s", r.Host, r.Proto)
	}))
	defer registry.Close()

	logger := slog.New(slog.DiscardHandler)
	pool, err := upstream.New(upstream.Config{Route: "registry", Addrs: []string{registry.Listener.Addr().String()}, Logger: logger})
	if err != nil {
		panic(err)
	}
	routes, err := sni.NewTable([]*sni.Route{{
		Name: "registry", SNI: []string{"example.com"}, Mode: sni.ModeSplice, Pool: pool,
	}}, "")
	if err != nil {
		panic(err)
	}
	srv, err := sni.New(sni.Config{IdleTimeout: time.Minute, Logger: logger}, routes)
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// A client whose DNS sends example.com to the gateway.
	client := registry.Client()
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, network, ln.Addr().String())
	}
	resp, err := client.Get("https://example.com/v2/")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	client.CloseIdleConnections()

	// Stop accepting, let the tunnel finish, close what is left after 5s.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(srv.Shutdown(ctx), <-served)
	// Output:
	// 200 hello from example.com over HTTP/1.1
	// <nil> sni: server closed
}
