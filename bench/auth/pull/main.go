// Command pull pulls the bench registry's image (bench/loadgen's: a
// manifest, its config and layers) N times through one endpoint and
// prints the time of each pull, checking every digest. bench/auth/run.sh
// runs it against snigate's auth route and against distribution's proxy
// mode.
//
//	pull -addr 127.0.0.1:19501 -name registry.bench.test -ca ca.crt -n 5
//	pull -addr 127.0.0.1:19505 -plain -n 5
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

type descriptor struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

type manifest struct {
	Config descriptor   `json:"config"`
	Layers []descriptor `json:"layers"`
}

func main() {
	addr := flag.String("addr", "", "address to connect to (required)")
	name := flag.String("name", "registry.bench.test", "SNI and Host of the requests")
	caFile := flag.String("ca", "", "CA file the endpoint's certificate is checked with")
	plain := flag.Bool("plain", false, "plain HTTP (distribution's proxy without TLS)")
	repo := flag.String("repo", "bench/app", "repository")
	tag := flag.String("tag", "latest", "tag")
	n := flag.Int("n", 3, "pulls")
	flag.Parse()
	if err := run(*addr, *name, *caFile, *plain, *repo, *tag, *n); err != nil {
		fmt.Fprintln(os.Stderr, "pull:", err)
		os.Exit(1)
	}
}

func run(addr, name, caFile string, plain bool, repo, tag string, n int) error {
	if addr == "" {
		return fmt.Errorf("-addr is required")
	}
	c, base, err := client(addr, name, caFile, plain)
	if err != nil {
		return err
	}
	for i := range n {
		start := time.Now()
		bytes, err := pullOnce(c, base, repo, tag)
		if err != nil {
			return fmt.Errorf("pull %d: %w", i+1, err)
		}
		fmt.Printf("pull %d %.1f ms %d bytes\n", i+1, float64(time.Since(start).Microseconds())/1000, bytes)
		c.CloseIdleConnections() // each pull is a node's: new connections
	}
	return nil
}

// client is an HTTP client that dials addr whatever the URL names.
func client(addr, name, caFile string, plain bool) (*http.Client, string, error) {
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
	}
	tr := &http.Transport{DialContext: dial, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 4}
	if plain {
		return &http.Client{Transport: tr, Timeout: 10 * time.Minute}, "http://" + addr, nil
	}
	pool := x509.NewCertPool()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, "", err
		}
		pool.AppendCertsFromPEM(pem)
	}
	tr.TLSClientConfig = &tls.Config{ServerName: name, RootCAs: pool}
	return &http.Client{Transport: tr, Timeout: 10 * time.Minute}, "https://" + name, nil
}

// pullOnce fetches the manifest by tag and every blob it names, checking
// digests; it returns the bytes read.
func pullOnce(c *http.Client, base, repo, tag string) (int64, error) {
	body, err := get(c, base+"/v2/"+repo+"/manifests/"+tag, "application/vnd.oci.image.manifest.v1+json")
	if err != nil {
		return 0, err
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return 0, fmt.Errorf("manifest: %w", err)
	}
	total := int64(len(body))
	for _, d := range append([]descriptor{m.Config}, m.Layers...) {
		n, err := getBlob(c, base+"/v2/"+repo+"/blobs/"+d.Digest, d)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func get(c *http.Client, url, accept string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s %s", url, resp.Status, b)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 4<<20))
}

func getBlob(c *http.Client, url string, d descriptor) (int64, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		return n, fmt.Errorf("GET %s: %w", url, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != d.Digest || n != d.Size {
		return n, fmt.Errorf("GET %s: %d bytes of %s, want %d of %s", url, n, got, d.Size, d.Digest)
	}
	return n, nil
}
