// Command verifybench measures the cost of the signature policy
// (routes[].http.verify, issue 32): manifest requests through a snigate
// http route with verify against the same route without it, in the same
// run, in interleaved rounds. bench/verify/run.sh drives it.
//
// It starts a registry on 127.0.0.1 that serves N images, each signed
// with cosign's signature tag form (sha256-<hex>.sig, a simple-signing
// payload signed by an ECDSA P-256 key whose public half it writes as
// cosign.pub), writes a snigate configuration with two routes to it,
// "plain" (http: {}) and "verify" (http.verify with that key), runs
// snigate, and measures per round:
//
//	plain-tag       GET the manifest by tag, route without verify
//	verify-cached   the same, route with verify: a remembered decision
//	plain-digest    GET manifests by digest, each one new, without verify
//	verify-first    the same with verify: every request a first decision
//	                (the manifest, its signature tag and payload read
//	                through the chain, the signature verified)
//
// First decisions need a digest never decided before for every request:
// the registry holds N signed images and each verify-first request takes
// the next unused one (a run stops a measurement early when they run out,
// and says so).
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	snigate := flag.String("snigate", "", "the snigate binary (required)")
	dir := flag.String("dir", "", "work directory (required)")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	dur := flag.Duration("time", 3*time.Second, "one measurement")
	conc := flag.Int("conc", 8, "concurrent keep-alive connections")
	images := flag.Int("images", 40000, "signed images in the registry (first decisions available)")
	flag.Parse()
	if *snigate == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "verifybench: -snigate and -dir are required")
		os.Exit(2)
	}
	if err := run(*snigate, *dir, *rounds, *dur, *conc, *images); err != nil {
		fmt.Fprintln(os.Stderr, "verifybench:", err)
		os.Exit(1)
	}
}

func run(bin, dir string, rounds int, dur time.Duration, conc, n int) error {
	pki, err := newPKI(dir)
	if err != nil {
		return err
	}
	fmt.Printf("signing %d images\n", n)
	reg, err := newRegistry(pki.key, n)
	if err != nil {
		return err
	}
	regLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: reg, TLSConfig: &tls.Config{Certificates: []tls.Certificate{pki.serve}}, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)} // snigate's tcp health checks close without a handshake
	go srv.ServeTLS(regLn, "", "")
	defer srv.Close()
	gw, err := startSnigate(bin, dir, regLn.Addr().String())
	if err != nil {
		return err
	}
	defer gw.stop()
	c := &client{addr: gw.addr, roots: pki.roots}
	if err := c.waitReady(); err != nil {
		return fmt.Errorf("%w\n%s", err, gw.tail())
	}
	var next atomic.Int64
	scen := []struct {
		name, host string
		path       func() (string, string, bool)
	}{
		{"plain-tag", "plain.bench", func() (string, string, bool) { return "/v2/bench/app/manifests/v1", reg.digests[0], true }},
		{"verify-cached", "verify.bench", func() (string, string, bool) { return "/v2/bench/app/manifests/v1", reg.digests[0], true }},
		{"plain-digest", "plain.bench", reg.byDigest(&next)},
		{"verify-first", "verify.bench", reg.byDigest(&next)},
	}
	for _, s := range scen { // warm-up, unmeasured: connections, the tag's first decision
		c.measure(s.host, s.path, 300*time.Millisecond, conc)
	}
	results := map[string][]stat{}
	for round := 1; round <= rounds; round++ {
		for _, s := range scen {
			st := c.measure(s.host, s.path, dur, conc)
			results[s.name] = append(results[s.name], st)
			fmt.Printf("round %d %-14s %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d%s\n",
				round, s.name, st.rate, st.p50, st.p99, st.errs, st.note)
		}
	}
	report(results)
	return gw.err()
}

// stat is one measurement.
type stat struct {
	rate, p50, p99 float64
	errs           int
	note           string
}

func report(results map[string][]stat) {
	med := func(name string) float64 {
		var v []float64
		for _, s := range results[name] {
			v = append(v, s.rate)
		}
		sort.Float64s(v)
		if len(v) == 0 {
			return 0
		}
		return v[len(v)/2]
	}
	fmt.Println("\nmedians (req/s) and cost of verify:")
	for _, p := range [][2]string{{"plain-tag", "verify-cached"}, {"plain-digest", "verify-first"}} {
		a, b := med(p[0]), med(p[1])
		extra := 0.0
		if a > 0 && b > 0 {
			extra = (1/b - 1/a) * 1e6
		}
		fmt.Printf("  %-14s %8.0f  %-14s %8.0f  ratio %.2f  (%+.0f µs of the machine per request)\n", p[0], a, p[1], b, b/a, extra)
	}
}

// client sends requests to snigate's TLS listener for a route's name.
type client struct {
	addr  string
	roots *x509.CertPool
}

func (c *client) transport(host string) *http.Transport {
	return &http.Transport{
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			d := tls.Dialer{Config: &tls.Config{ServerName: host, RootCAs: c.roots, NextProtos: []string{"http/1.1"}}}
			return d.DialContext(ctx, "tcp", c.addr)
		},
		MaxIdleConnsPerHost: 1,
	}
}

// waitReady polls GET /v2/ on both routes (bounded: 10s).
func (c *client) waitReady() error {
	var last error
	for range 100 {
		last = nil
		for _, h := range []string{"plain.bench", "verify.bench"} {
			tr := c.transport(h)
			resp, err := (&http.Client{Transport: tr, Timeout: time.Second}).Get("https://" + h + "/v2/")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("GET /v2/ on %s: %s", h, resp.Status)
				}
			}
			tr.CloseIdleConnections()
			if err != nil {
				last = err
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("snigate never answered: %w", last)
}

// measure runs conc keep-alive workers for dur, each fetching path()
// and checking the digest.
func (c *client) measure(host string, path func() (string, string, bool), dur time.Duration, conc int) stat {
	var mu sync.Mutex
	var lat []float64
	var errs int
	var firstErr error
	exhausted := atomic.Bool{}
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			tr := c.transport(host)
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for time.Now().Before(deadline) {
				p, want, ok := path()
				if !ok {
					exhausted.Store(true)
					return
				}
				t0 := time.Now()
				err := get(hc, "https://"+host+p, want)
				d := time.Since(t0).Seconds() * 1000
				mu.Lock()
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	slices.Sort(lat)
	st := stat{rate: float64(len(lat)) / el, errs: errs}
	if len(lat) > 0 {
		st.p50, st.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	if exhausted.Load() {
		st.note = "  (the signed images ran out before the time: raise -images)"
	}
	if firstErr != nil {
		st.note += "  first error: " + firstErr.Error()
	}
	return st
}

func get(hc *http.Client, url, want string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s %.200s", url, resp.Status, b)
	}
	if d := digestOf(b); d != want {
		return fmt.Errorf("GET %s: manifest %s, want %s", url, d, want)
	}
	return nil
}

// registry serves n signed images of bench/app: manifests by digest (the
// first also as tag v1), their signature tags and payloads, and /v2/.
type registry struct {
	paths   map[string][]byte
	types   map[string]string
	digests []string
}

func newRegistry(key *ecdsa.PrivateKey, n int) (*registry, error) {
	r := &registry{paths: map[string][]byte{}, types: map[string]string{}}
	put := func(p, mt string, b []byte) { r.paths[p], r.types[p] = b, mt }
	const mt = "application/vnd.oci.image.manifest.v1+json"
	layer := "sha256:" + hex.EncodeToString(make([]byte, 32))
	for i := range n {
		m := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":2},`+
			`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":1}],"annotations":{"n":"%d"}}`, mt, layer, layer, i)
		d := digestOf([]byte(m))
		r.digests = append(r.digests, d)
		put("/v2/bench/app/manifests/"+d, mt, []byte(m))
		if i == 0 {
			put("/v2/bench/app/manifests/v1", mt, []byte(m))
		}
		payload := []byte(`{"critical":{"identity":{"docker-reference":"bench/app"},"image":{"docker-manifest-digest":"` + d +
			`"},"type":"cosign container image signature"},"optional":null}`)
		h := sha256.Sum256(payload)
		sig, err := ecdsa.SignASN1(rand.Reader, key, h[:])
		if err != nil {
			return nil, err
		}
		pd := digestOf(payload)
		put("/v2/bench/app/blobs/"+pd, "application/octet-stream", payload)
		sm, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mt,
			"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": pd, "size": len(payload)},
			"layers": []any{map[string]any{"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json", "digest": pd, "size": len(payload),
				"annotations": map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}}}})
		put("/v2/bench/app/manifests/sha256-"+d[len("sha256:"):]+".sig", mt, sm)
	}
	return r, nil
}

// byDigest hands out the images' digests in turn, each once per run (1 to
// n-1: the first is the tag's).
func (r *registry) byDigest(next *atomic.Int64) func() (string, string, bool) {
	return func() (string, string, bool) {
		i := next.Add(1)
		if i >= int64(len(r.digests)) {
			return "", "", false
		}
		d := r.digests[i]
		return "/v2/bench/app/manifests/" + d, d, true
	}
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/v2/" {
		w.Write([]byte("{}"))
		return
	}
	b, ok := r.paths[req.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not here"}]}`))
		return
	}
	w.Header().Set("Content-Type", r.types[req.URL.Path])
	w.Header().Set("Docker-Content-Digest", digestOf(b))
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if req.Method != http.MethodHead {
		w.Write(b)
	}
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// pki is the bench's CA-less material: one self-signed certificate for
// the registry and both route names, and the cosign key.
type pki struct {
	serve tls.Certificate
	roots *x509.CertPool
	key   *ecdsa.PrivateKey
}

func newPKI(dir string) (*pki, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: bigOne(), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"registry.bench", "plain.bench", "verify.bench"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return nil, err
	}
	kd, _ := x509.MarshalECPrivateKey(k)
	files := map[string][]byte{
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}),
	}
	sk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, _ := x509.MarshalPKIXPublicKey(&sk.PublicKey)
	files["cosign.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	cert, err := tls.X509KeyPair(files["cert.pem"], files["key.pem"])
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(files["cert.pem"])
	return &pki{serve: cert, roots: roots, key: sk}, nil
}

// gateway is the snigate process.
type gateway struct {
	cmd  *exec.Cmd
	addr string
	log  string
	done chan error
}

const config = `listen:
  tls: [%[1]q]
  admin: %[2]q
routes:
  - name: plain
    sni: ["plain.bench"]
    mode: bridge
    upstreams: [%[3]q]
    health: {check: tcp, interval: 1h}
    serve: {cert: cert.pem, key: key.pem}
    upstream_tls: {ca: cert.pem, server_name: registry.bench}
    http: {}
  - name: verify
    sni: ["verify.bench"]
    mode: bridge
    upstreams: [%[3]q]
    health: {check: tcp, interval: 1h}
    serve: {cert: cert.pem, key: key.pem}
    upstream_tls: {ca: cert.pem, server_name: registry.bench}
    http:
      verify: {cosign: {keys: [cosign.pub]}}
`

func startSnigate(bin, dir, upstream string) (*gateway, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	admin, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "snigate.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(config, addr, admin, upstream)), 0o600); err != nil {
		return nil, err
	}
	g := &gateway{addr: addr, log: filepath.Join(dir, "snigate.log"), done: make(chan error, 1)}
	out, err := os.Create(g.log)
	if err != nil {
		return nil, err
	}
	g.cmd = exec.Command(bin, "run", "-c", cfg, "--log-level", "warn")
	g.cmd.Stdout, g.cmd.Stderr = out, out
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { g.done <- g.cmd.Wait(); out.Close() }()
	return g, nil
}

func (g *gateway) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
}

// err reports a gateway that exited during the run.
func (g *gateway) err() error {
	select {
	case err := <-g.done:
		g.done <- err
		return errors.Join(errors.New("snigate exited during the run"), err)
	default:
		return nil
	}
}

func (g *gateway) tail() string {
	b, _ := os.ReadFile(g.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func bigOne() *big.Int { return big.NewInt(1) }
