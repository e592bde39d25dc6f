package httpbridge

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// The handler chain in process over real TLS on 127.0.0.1: a node client
// -> the gateway (sni.Server terminating TLS, the Bridge) -> a registry
// over mTLS (client certificate required). Besides ns/op and allocs/op,
// records/op counts the TLS records the gateway wrote to the node per
// request (each is one write system call in crypto/tls).

// benchManifest is a manifest of a typical size (2 KiB).
var benchManifest = []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","layers":[%s]}`,
	repeatJoin(`{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","size":1234567,"digest":"`+dgst+`"}`, 14)))

func repeatJoin(s string, n int) string {
	out := s
	for range n - 1 {
		out += "," + s
	}
	return out
}

// benchRegistry serves one manifest and blobs of the sizes asked for
// (/v2/bench/app/blobs/sha256:<hex of the size>), from memory.
func benchRegistry(tb testing.TB, p *testPKI, sizes ...int) *testUpstream {
	tb.Helper()
	blobs := make(map[string][]byte)
	for _, n := range sizes {
		blobs["/v2/bench/app/blobs/"+benchDigest(n)] = make([]byte, n)
	}
	return startUpstream(tb, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := benchManifest
		if r.URL.Path != "/v2/bench/app/manifests/v1" {
			body = blobs[r.URL.Path]
			if body == nil {
				http.NotFound(w, r)
				return
			}
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Docker-Content-Digest", dgst)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
}

// benchDigest names the blob of n bytes.
func benchDigest(n int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(n)))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// benchWorld is a world over benchRegistry with an audit log written
// to io.Discard (the writer's work counts, no memory grows).
func benchWorld(b *testing.B, sizes ...int) *world {
	b.Helper()
	p := newTestPKI(b)
	up := benchRegistry(b, p, sizes...)
	return newWorld(b, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Audit: discardAudit(b)}})
}

// recordCounter counts the TLS records read from the gateway (it parses
// the 5-byte record headers of the byte stream).
type recordCounter struct {
	net.Conn
	records *atomic.Int64
	hdr     [5]byte
	have    int // bytes of hdr read
	skip    int // record payload bytes still to pass
}

func (c *recordCounter) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	for b := p[:n]; len(b) > 0; {
		if c.skip > 0 {
			k := min(c.skip, len(b))
			c.skip -= k
			b = b[k:]
			continue
		}
		k := copy(c.hdr[c.have:], b)
		c.have += k
		b = b[k:]
		if c.have == len(c.hdr) {
			c.have, c.skip = 0, int(c.hdr[3])<<8|int(c.hdr[4])
			c.records.Add(1)
		}
	}
	return n, err
}

// benchNode is a node client speaking proto to the world's gateway,
// counting the records it receives; keepAlive false: a fresh TLS
// connection per request.
func benchNode(tb testing.TB, w *world, proto string, keepAlive bool, records *atomic.Int64) *http.Client {
	tb.Helper()
	t := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: w.pki.ca.Pool(), ServerName: registryName, NextProtos: []string{proto}},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := new(net.Dialer).DialContext(ctx, network, w.addr)
			if err != nil {
				return nil, err
			}
			return &recordCounter{Conn: c, records: records}, nil
		},
		ForceAttemptHTTP2:  proto == "h2",
		DisableCompression: true,
		DisableKeepAlives:  !keepAlive,
		MaxConnsPerHost:    1,
	}
	if proto != "h2" {
		t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	tb.Cleanup(t.CloseIdleConnections)
	return &http.Client{Transport: t}
}

// benchGet fetches url and reads its body into buf, failing on anything
// but a 200 of want bytes.
func benchGet(b *testing.B, c *http.Client, url string, want int, buf []byte) {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.CopyBuffer(io.Discard, onlyReader{resp.Body}, buf)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || n != int64(want) {
		b.Fatalf("GET %s: %d, %d bytes (want %d), %v", url, resp.StatusCode, n, want, err)
	}
}

// onlyReader hides io.WriterTo, so that CopyBuffer uses the buffer.
type onlyReader struct{ io.Reader }

// runChain runs b.N requests of url answered with want bytes.
func runChain(b *testing.B, w *world, proto string, keepAlive bool, url string, want int) {
	var records atomic.Int64
	c := benchNode(b, w, proto, keepAlive, &records)
	buf := make([]byte, 64<<10)
	benchGet(b, c, url, want, buf) // the upstream connection, and the node's when kept alive
	records.Store(0)
	b.SetBytes(int64(want))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		benchGet(b, c, url, want, buf)
	}
	b.StopTimer()
	b.ReportMetric(float64(records.Load())/float64(b.N), "records/op")
}

// BenchmarkChainManifestFreshConn: a manifest on a fresh node TLS
// connection per request (HTTP/1.1, as kubelet's first pull of an image).
func BenchmarkChainManifestFreshConn(b *testing.B) {
	w := benchWorld(b)
	runChain(b, w, "http/1.1", false, "https://"+registryName+"/v2/bench/app/manifests/v1", len(benchManifest))
}

// BenchmarkChainBlob16KiB: small blobs over one kept-alive node
// connection, HTTP/1.1 and HTTP/2.
func BenchmarkChainBlob16KiB(b *testing.B) {
	const size = 16 << 10
	for _, proto := range []string{"http/1.1", "h2"} {
		b.Run(proto, func(b *testing.B) {
			w := benchWorld(b, size)
			runChain(b, w, proto, true, "https://"+registryName+"/v2/bench/app/blobs/"+benchDigest(size), size)
		})
	}
}

// BenchmarkChainBlob64MiB: a large blob over one node connection.
func BenchmarkChainBlob64MiB(b *testing.B) {
	const size = 64 << 20
	for _, proto := range []string{"http/1.1", "h2"} {
		b.Run(proto, func(b *testing.B) {
			w := benchWorld(b, size)
			runChain(b, w, proto, true, "https://"+registryName+"/v2/bench/app/blobs/"+benchDigest(size), size)
		})
	}
}
