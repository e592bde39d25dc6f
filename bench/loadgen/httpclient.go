package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
)

// httpName is the SNI and Host of the http route (the serve certificate
// carries it); the URL of every request of the http scenarios is on it.
const httpName = "registry.bench.test"

// httpClientTLS is the TLS configuration of the http scenarios' client:
// clientTLS's, with the http route's name, offering only http/1.1 (every
// target gets HTTP/1.1 on the node leg, so the comparison is fair: nginx
// and HAProxy are configured for it, snigate also offers h2).
func httpClientTLS(t target, p *material, curves []tls.CurveID) *tls.Config {
	cfg := clientTLS(t, p, nil, curves)
	if !t.Direct {
		cfg.ServerName = httpName
	}
	cfg.NextProtos = []string{"http/1.1"}
	return cfg
}

// transports makes the HTTP/1.1 client transports of one measurement,
// each dialing the target's http address whatever the URL says, and
// closes all their connections at the end.
type transports struct {
	mu  sync.Mutex
	all []*http.Transport
}

// new returns a transport holding at most one connection, kept alive
// between requests when keepAlive is set, else one per request.
func (ts *transports) new(addr string, cfg *tls.Config, keepAlive bool) *http.Client {
	d := net.Dialer{Timeout: opTimeout}
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		},
		TLSClientConfig:       cfg,
		TLSHandshakeTimeout:   opTimeout,
		ResponseHeaderTimeout: opTimeout,
		DisableKeepAlives:     !keepAlive,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   1,
		MaxConnsPerHost:       1,
		Protocols:             protos,
	}
	ts.mu.Lock()
	ts.all = append(ts.all, tr)
	ts.mu.Unlock()
	return &http.Client{Transport: tr, Timeout: 0} // each request carries its own deadline
}

// closeAll closes the idle connections of every transport made.
func (ts *transports) closeAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, tr := range ts.all {
		tr.CloseIdleConnections()
	}
	ts.all = nil
}

// httpURL is the URL of path on the http route.
func httpURL(path string) string { return "https://" + httpName + path }

// fetch GETs path, reads the body through buf and returns the byte count and the response's headers; anything
// but 200 is an error.
func fetch(ctx context.Context, c *http.Client, path string, hdr http.Header, buf []byte) (int64, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, httpURL(path), nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	n, err := readAll(resp.Body, buf)
	if err != nil {
		return n, resp.Header, err
	}
	if resp.StatusCode != http.StatusOK {
		return n, resp.Header, fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, buf[:min(int(n), len(buf))])
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, resp.Header, fmt.Errorf("GET %s: %d bytes, Content-Length %d", path, n, resp.ContentLength)
	}
	return n, resp.Header, nil
}

// readAll reads r to EOF through buf and returns the byte count; buf
// holds the body when it fits.
func readAll(r io.Reader, buf []byte) (int64, error) {
	var n int64
	for {
		dst := buf
		if n < int64(len(buf)) {
			dst = buf[n:]
		}
		m, err := r.Read(dst)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
