// Command floor is the reference point of the http scenarios (7): the
// least a Go HTTP/1.1 reverse proxy does per request with net/http's own
// parsers on both legs, and nothing of snigate's. It terminates the
// node's TLS, reads each request with http.ReadRequest, sets the
// forwarding headers bench/run.sh gives every proxy, writes the request
// with (*http.Request).Write on a pooled mTLS connection to the registry,
// reads the answer with http.ReadResponse and writes it back with
// (*http.Response).Write, all in the node connection's goroutine. It has
// no policy, audit, metrics, timeouts or error answers: it measures what
// Go's TLS, parsers, runtime and system calls cost, which no gateway
// written in Go can go below.
//
// -mode server puts net/http's http.Server on the node leg instead, and
// -mode transport net/http's http.Transport on the upstream leg, so one
// run shows what each of the two costs (bench/RESULTS.md, issue 29).
//
//	floor -pki DIR -listen ADDR -upstream ADDR [-mode floor|server|transport]
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
)

func main() {
	pki := flag.String("pki", "", "directory of loadgen certs: serve.crt/key (node leg), client.crt/key and ca.crt (upstream leg)")
	listen := flag.String("listen", "127.0.0.1:0", "address for the node connections")
	up := flag.String("upstream", "", "the registry's address")
	mode := flag.String("mode", "floor", "floor | server (http.Server node leg) | transport (http.Transport upstream leg)")
	flag.Parse()
	p, err := newProxy(*pki, *up, *mode)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := tls.Listen("tcp", *listen, p.serve)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("floor (%s) on %s, upstream %s", *mode, ln.Addr(), *up)
	if *mode == "server" {
		log.Fatal(http.Serve(ln, http.HandlerFunc(p.serveHTTP)))
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go p.conn(c)
	}
}

// proxy is the reverse proxy of one registry.
type proxy struct {
	serve     *tls.Config // node leg
	dial      *tls.Config // upstream leg (client certificate)
	upstream  string
	transport *http.Transport // -mode transport

	mu   sync.Mutex
	idle []*upConn
}

func newProxy(pki, upstream, mode string) (*proxy, error) {
	serve, err := tls.LoadX509KeyPair(pki+"/serve.crt", pki+"/serve.key")
	if err != nil {
		return nil, fmt.Errorf("node certificate: %w", err)
	}
	client, err := tls.LoadX509KeyPair(pki+"/client.crt", pki+"/client.key")
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	ca, err := os.ReadFile(pki + "/ca.crt")
	if err != nil {
		return nil, fmt.Errorf("registry CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, errors.New("registry CA: no certificate in ca.crt")
	}
	p := &proxy{
		serve: &tls.Config{Certificates: []tls.Certificate{serve}, NextProtos: []string{"http/1.1"}},
		dial: &tls.Config{Certificates: []tls.Certificate{client}, RootCAs: roots, ServerName: "upstream.bench.test",
			NextProtos: []string{"http/1.1"}, ClientSessionCache: tls.NewLRUClientSessionCache(64)},
		upstream: upstream,
	}
	if mode == "transport" {
		p.transport = &http.Transport{TLSClientConfig: p.dial, MaxIdleConnsPerHost: 100, DisableCompression: true}
	} else if mode != "floor" && mode != "server" {
		return nil, fmt.Errorf("-mode %q: want floor, server or transport", mode)
	}
	return p, nil
}

// upConn is one kept-alive upstream connection.
type upConn struct {
	c  *tls.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func (p *proxy) get() (*upConn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		u := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return u, nil
	}
	p.mu.Unlock()
	c, err := tls.Dial("tcp", p.upstream, p.dial)
	if err != nil {
		return nil, err
	}
	return &upConn{c: c, br: bufio.NewReaderSize(c, 16<<10), bw: bufio.NewWriterSize(c, 4<<10)}, nil
}

func (p *proxy) put(u *upConn) {
	p.mu.Lock()
	p.idle = append(p.idle, u)
	p.mu.Unlock()
}

// forwarded sets the forwarding headers every proxy of the run sets.
func forwarded(h http.Header, ip string) {
	h.Set("X-Forwarded-For", ip)
	h.Set("X-Real-IP", ip)
	h.Set("X-Forwarded-Proto", "https")
	h.Set("Forwarded", "for="+ip+";proto=https")
}

// roundTrip sends req on a pooled connection and reads the answer's
// headers; done gives the connection back once the body was read.
func (p *proxy) roundTrip(req *http.Request) (resp *http.Response, done func(), err error) {
	if p.transport != nil {
		req.URL.Scheme, req.URL.Host, req.RequestURI = "https", p.upstream, ""
		resp, err := p.transport.RoundTrip(req)
		return resp, func() { _ = resp.Body.Close() }, err
	}
	u, err := p.get()
	if err != nil {
		return nil, nil, err
	}
	if err := req.Write(u.bw); err != nil {
		_ = u.c.Close()
		return nil, nil, err
	}
	if err := u.bw.Flush(); err != nil {
		_ = u.c.Close()
		return nil, nil, err
	}
	if resp, err = http.ReadResponse(u.br, req); err != nil {
		_ = u.c.Close()
		return nil, nil, err
	}
	return resp, func() {
		_ = resp.Body.Close()
		if resp.Close {
			_ = u.c.Close()
			return
		}
		p.put(u)
	}, nil
}

// conn serves one node connection in its goroutine.
func (p *proxy) conn(c net.Conn) {
	defer c.Close()
	br, bw := bufio.NewReaderSize(c, 4<<10), bufio.NewWriterSize(c, 16<<10)
	ip, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		forwarded(req.Header, ip)
		last := req.Close // the node's Connection: close ends this connection, not the upstream one
		req.Close = false
		req.Header.Del("Connection")
		resp, done, err := p.roundTrip(req)
		if err != nil {
			log.Print(err)
			return
		}
		err = writeResponse(bw, resp, last)
		done()
		if err != nil || bw.Flush() != nil || last {
			return
		}
	}
}

// serveHTTP is the node leg of -mode server.
func (p *proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	out := r.Clone(r.Context())
	out.RequestURI, out.Close = "", false
	out.Header.Del("Connection")
	forwarded(out.Header, ip)
	resp, done, err := p.roundTrip(out)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer done()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// writeResponse writes resp to the node; last: the node's connection
// ends after it (the upstream's Connection: close is the upstream's).
func writeResponse(w io.Writer, resp *http.Response, last bool) error {
	upClose := resp.Close
	resp.Close = last
	err := resp.Write(w)
	resp.Close = upClose
	return err
}
