package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

// newRegistryServer is the mTLS HTTPS server of the registry: the bench
// CA's client certificate required, h2 and http/1.1 offered by ALPN, and
// every TLS handshake counted in stats (the proxies' upstream connection
// reuse shows as few handshakes). Serve it with ServeTLS(ln, "", "").
func newRegistryServer(p *material, reg *registry, stats *upstreamStats) *http.Server {
	cfg := &tls.Config{
		Certificates: []tls.Certificate{p.upstream},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.roots,
		NextProtos:   []string{"h2", "http/1.1"},
		// Called for every handshake, resumed ones included.
		VerifyConnection: func(cs tls.ConnectionState) error {
			stats.record(cs)
			return nil
		},
	}
	return &http.Server{
		Handler:           reg,
		TLSConfig:         cfg,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       10 * time.Minute, // proxies keep their upstream connections between measurements
		ErrorLog:          log.New(os.Stderr, "registry: ", log.LstdFlags),
	}
}

// runningRegistry is the registry upstream of `loadgen upstream -http`;
// a nil one (no -http) serves nothing.
type runningRegistry struct {
	ln  net.Listener
	srv *http.Server
	reg *registry
}

// startRegistry builds the registry's content (the large blob's digest
// first, so that it answers as soon as it listens; and the cache
// scenarios' layer of layerSize bytes, 0: none) and listens on addr.
func startRegistry(addr string, bigSize, layerSize int64, p *material, stats *upstreamStats) (*runningRegistry, error) {
	if addr == "" {
		return nil, nil
	}
	reg := newRegistry(bigSize)
	if layerSize > 0 {
		reg.addLayer(newCacheLayer(layerSize))
	}
	reg.sent = stats.addBlobBytes
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &runningRegistry{ln: ln, srv: newRegistryServer(p, reg, stats), reg: reg}, nil
}

func (rr *runningRegistry) describe() string {
	if rr == nil {
		return ""
	}
	return fmt.Sprintf(" registry %s (large blob %s, %d MiB; cache layer %s, %d MiB)", rr.ln.Addr(),
		rr.reg.bigDigest, rr.reg.big.size>>20, rr.reg.layerDigest, rr.reg.layer.size>>20)
}

func (rr *runningRegistry) serve() error {
	if rr == nil {
		return nil
	}
	if err := rr.srv.ServeTLS(rr.ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (rr *runningRegistry) close() {
	if rr != nil {
		rr.srv.Close()
	}
}
