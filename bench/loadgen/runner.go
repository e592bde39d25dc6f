package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// runner runs the chosen scenarios against every target in interleaved
// rounds and appends each Result to a JSON-lines file.
type runner struct {
	pki           *material
	msgs          messages
	targets       []target
	upstreamPID   int
	upstreamStats string        // host:port of the upstream's handshake counters; "" none
	curves        []tls.CurveID // key exchanges the TLS client offers; nil: Go's default
	out           string        // JSON-lines file
	pprofDir      string
	liveMem       bool // http-bigblob: sample the live heap instead of profiling the CPU
	scenarios     []string
	rounds        int
	firstRound    int
	conc          int
	rateTime      time.Duration
	latRate       float64 // connections per second of splice-latency
	hsTime        time.Duration
	tputTime      time.Duration
	streams       []int
	httpTime      time.Duration // one http-manifest or http-blobs measurement
	httpStreams   []int         // connections of the http-bigblob scenarios
	// idleCounts are the tunnel counts of the idle-memory scenarios
	// (idle-mem-N), idleReads the delays after the last tunnel opened at
	// which the proxy's RSS is read (ascending).
	idleCounts []int
	idleReads  []time.Duration
	// The cache scenarios: the layer the nodes pull (its digest computed
	// from -layer-mib as the registry's), how many pull it at once, how
	// long one pull may take, the stream counts of cache-hit.
	layer        descriptor
	pullNodes    int
	pullTimeout  time.Duration
	cacheStreams []int
	pause        time.Duration
	// maxOther is the CPU (percent of one core) other work on the machine
	// may use during a measurement before it is taken again, at most
	// retries more times and within retryBudget for the whole run; the
	// attempt with the least other work is kept.
	maxOther    float64
	retries     int
	retryBudget time.Duration
	log         io.Writer
	// probed holds each target's probeHTTP outcome (nil: it takes part
	// in the http scenarios); catalog is the first probe's catalog.
	probed  map[string]error
	catalog *catalog
}

func (r *runner) newResult(scenario string, t target, round int) Result {
	return Result{Scenario: scenario, Target: t.Name, Round: round,
		Values: map[string]float64{}, Notes: map[string]string{}}
}

// run measures each chosen scenario in rounds; within a round every target
// is measured once, in the order given (A B C D A B C D ...).
func (r *runner) run() error {
	for _, sc := range r.scenarioList() {
		if !r.chosen(sc.name) {
			continue
		}
		if sc.warm {
			r.warmUp(sc)
		}
		for round := r.firstRound; round < r.firstRound+r.rounds; round++ {
			for _, t := range r.targets {
				if sc.addr(t) == "" {
					continue
				}
				if err := r.ready(sc, t); err != nil {
					if round > r.firstRound {
						continue
					}
					if err := r.skip(sc, t, round, err); err != nil {
						return err
					}
					continue
				}
				if err := r.measureOne(sc, t, round); err != nil {
					return err
				}
				time.Sleep(r.pause)
			}
		}
	}
	return nil
}

// chosen reports whether scenario name was asked for; "splice-tput" picks
// every splice-tput-N, "http" and "http-*" every http scenario.
func (r *runner) chosen(name string) bool {
	return slices.ContainsFunc(r.scenarios, func(s string) bool {
		matched, _ := path.Match(s, name)
		return s == "all" || s == name || strings.HasPrefix(name, s+"-") || matched
	})
}

// warmUp runs each target briefly so that first-round costs (heap growth,
// thread pools, page faults) do not land in round 1.
func (r *runner) warmUp(sc scenario) {
	saved := []time.Duration{r.rateTime, r.hsTime, r.httpTime}
	r.rateTime, r.hsTime, r.httpTime = time.Second/2, time.Second/2, time.Second/2
	dir := r.pprofDir
	r.pprofDir = ""
	for _, t := range r.targets {
		if sc.addr(t) != "" && r.ready(sc, t) == nil {
			sc.measure(r, t, 0)
		}
	}
	r.rateTime, r.hsTime, r.httpTime, r.pprofDir = saved[0], saved[1], saved[2], dir
}

// ready reports why t cannot take part in sc (nil: it can). For the http
// scenarios it probes t once per run (probeHTTP): a target that does not
// answer, or that copies bytes instead of speaking HTTP (snigate without
// its HTTP bridge), is skipped with the reason instead of measured.
func (r *runner) ready(sc scenario, t target) error {
	if !sc.http {
		return nil
	}
	if err, ok := r.probed[t.Name]; ok {
		return err
	}
	cat, err := probeHTTP(t, r.pki, r.curves)
	if err == nil && r.catalog != nil && cat.manifestDigest != r.catalog.manifestDigest {
		err = fmt.Errorf("it serves the manifest %s, other targets %s", cat.manifestDigest, r.catalog.manifestDigest)
	}
	if err == nil && r.catalog == nil {
		r.catalog = cat
	}
	if r.probed == nil {
		r.probed = map[string]error{}
	}
	r.probed[t.Name] = err
	if err != nil {
		fmt.Fprintf(r.log, "target %s is skipped in the http scenarios: %v\n", t.Name, err)
	}
	return err
}

// skip records that t was not measured in sc, and why.
func (r *runner) skip(sc scenario, t target, round int, why error) error {
	res := r.newResult(sc.name, t, round)
	res.Notes["skipped"] = why.Error()
	fmt.Fprintf(r.log, "round %d %-15s %-9s SKIPPED (see above)\n", round, sc.name, t.Name)
	return appendResult(r.out, res)
}

func (r *runner) measureOne(sc scenario, t target, round int) error {
	res, err := r.cleanest(sc, t, round)
	if err != nil {
		res.Notes["error"] = err.Error()
		fmt.Fprintf(r.log, "round %d %-15s %-9s FAILED: %v\n", round, sc.name, t.Name, err)
	} else {
		fmt.Fprintf(r.log, "round %d %-15s %-9s %s | cpu %s\n", round, sc.name, t.Name, formatValues(res.Values), formatCPU(res.CPU))
	}
	return appendResult(r.out, res)
}

// cleanest measures, and measures again while other work on the machine
// took more than maxOther (see runner.maxOther), keeping the attempt with
// the least of it. Idle memory is not CPU-bound and is taken once.
func (r *runner) cleanest(sc scenario, t target, round int) (Result, error) {
	res, err := sc.measure(r, t, round)
	attempts := 1
	for try := 1; try <= r.retries && !strings.HasPrefix(sc.name, "idle-mem") && res.CPU.Other > r.maxOther && r.retryBudget > 0; try++ {
		fmt.Fprintf(r.log, "round %d %-15s %-9s other work used %.0f%% of a core: measuring again\n", round, sc.name, t.Name, res.CPU.Other)
		start := time.Now()
		again, aerr := sc.measure(r, t, round)
		r.retryBudget -= time.Since(start)
		attempts++
		if aerr == nil && (err != nil || again.CPU.Other < res.CPU.Other) {
			res, err = again, nil
		}
	}
	if res.Values != nil {
		res.Values["attempts"] = float64(attempts)
	}
	return res, err
}

func formatValues(v map[string]float64) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%.4g ", k, v[k])
	}
	return strings.TrimSpace(b.String())
}

func formatCPU(c CPUShare) string {
	return fmt.Sprintf("proxy %.0f%% loadgen %.0f%% upstream %.0f%% other %.0f%%", c.Proxy, c.Loadgen, c.Upstream, c.Other)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("want a comma-separated list of positive integers, got %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}
