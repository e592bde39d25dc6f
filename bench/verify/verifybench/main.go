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
//	plain-digest    GET manifests by digest, in turn, without verify
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
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
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
	var plainNext, verifyNext atomic.Int64
	scen := []struct {
		name, host string
		path       func() (string, string, bool)
	}{
		{"plain-tag", "plain.bench", func() (string, string, bool) { return "/v2/bench/app/manifests/v1", reg.digests[0], true }},
		{"verify-cached", "verify.bench", func() (string, string, bool) { return "/v2/bench/app/manifests/v1", reg.digests[0], true }},
		{"plain-digest", "plain.bench", reg.byDigest(&plainNext, true)},
		{"verify-first", "verify.bench", reg.byDigest(&verifyNext, false)},
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
