package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
)

// scenario is one measurement kind. addr picks the target's address for
// it ("" skips the target); measure takes one measurement.
type scenario struct {
	name string
	addr func(target) string
	warm bool // run a short unmeasured warm-up per target first
	// http marks the http scenarios: a target takes part only once
	// probeHTTP has passed for it (runner.ready).
	http    bool
	measure func(r *runner, t target, round int) (Result, error)
}

func spliceAddr(t target) string { return t.Splice }
func bridgeAddr(t target) string { return t.Bridge }

// proxyOnly skips the direct baseline (idle memory is the proxy's).
func proxyOnly(t target) string {
	if t.Direct {
		return ""
	}
	return t.Splice
}

// scenarioList returns the scenarios in run order.
func (r *runner) scenarioList() []scenario {
	list := []scenario{
		{name: "splice-rate", addr: spliceAddr, warm: true, measure: (*runner).spliceRate},
		{name: "splice-latency", addr: spliceAddr, warm: true, measure: (*runner).spliceLatency},
	}
	for _, n := range r.streams {
		list = append(list, scenario{name: fmt.Sprintf("splice-tput-%d", n), addr: spliceAddr, measure: r.spliceTput(n)})
	}
	list = append(list,
		scenario{name: "bridge-full", addr: bridgeAddr, warm: true, measure: r.bridgeHandshakes(false)},
		scenario{name: "bridge-resumed", addr: bridgeAddr, warm: true, measure: r.bridgeHandshakes(true)},
	)
	for _, n := range r.streams {
		list = append(list, scenario{name: fmt.Sprintf("bridge-tput-%d", n), addr: bridgeAddr, measure: r.bridgeTput(n)})
	}
	list = append(list,
		scenario{name: "http-manifest", addr: httpAddr, warm: true, http: true, measure: (*runner).httpManifest},
		scenario{name: "http-blobs", addr: httpAddr, warm: true, http: true, measure: (*runner).httpBlobs},
	)
	for _, n := range r.httpStreams {
		list = append(list, scenario{name: fmt.Sprintf("http-bigblob-%d", n), addr: httpAddr, http: true, measure: r.httpBigBlob(n)})
	}
	list = append(list, scenario{name: "cache-pull", addr: cacheAddr, http: true, measure: (*runner).cachePull})
	for _, n := range r.cacheStreams {
		list = append(list, scenario{name: fmt.Sprintf("cache-hit-%d", n), addr: cacheAddr, http: true, measure: r.cacheHit(n)})
	}
	for _, n := range r.idleCounts {
		list = append(list, scenario{name: idleScenario(n), addr: proxyOnly, measure: r.idleMem(n)})
	}
	return list
}

func (r *runner) spliceRate(t target, round int) (Result, error) {
	res := r.newResult("splice-rate", t, round)
	prof := r.startProfile(t, res, r.rateTime)
	cpu := startCPU(t.PID, r.upstreamPID)
	lr := closedLoop(r.conc, r.rateTime, spliceEcho(t.Splice, r.msgs))
	res.CPU = cpu.stop()
	prof.finish(&res, lr.ok)
	if lr.ok > 0 && !t.Direct {
		// Issue 21: the proxy's CPU time per connection (user + system,
		// all its processes), lower is better.
		res.Values["cpu_us_conn"] = res.CPU.Proxy / 100 * lr.elapsed.Seconds() / float64(lr.ok) * 1e6
	}
	return res, loopValues(&res, lr, "conn_s")
}

// spliceLatency is scenario 1 as an open loop at a fixed rate below every
// proxy's capacity (-lat-rate): the latency a proxy adds when it is not
// the bottleneck, which the closed loop of splice-rate cannot show (there
// latency is the concurrency divided by the rate).
func (r *runner) spliceLatency(t target, round int) (Result, error) {
	res := r.newResult("splice-latency", t, round)
	cpu := startCPU(t.PID, r.upstreamPID)
	lr := openLoop(r.latRate, r.rateTime, spliceEcho(t.Splice, r.msgs))
	res.CPU = cpu.stop()
	res.Values["offered_conn_s"] = r.latRate
	slices.Sort(lr.lat.all)
	res.Values["p999_ms"] = percentile(lr.lat.all, 99.9)
	return res, loopValues(&res, lr, "conn_s")
}

// loopValues records rate, latency and errors of a closed-loop run.
func loopValues(res *Result, lr loopResult, rateKey string) error {
	p50, p99 := lr.lat.summary()
	res.Values[rateKey] = lr.rate()
	res.Values["p50_ms"] = p50
	res.Values["p99_ms"] = p99
	res.Values["errors"] = float64(lr.errs)
	if lr.firstErr != nil {
		res.Notes["first_error"] = lr.firstErr.Error()
	}
	if lr.ok == 0 {
		return fmt.Errorf("no successful operation: %v", lr.firstErr)
	}
	return nil
}

func (r *runner) bridgeHandshakes(resume bool) func(*runner, target, int) (Result, error) {
	name := map[bool]string{false: "bridge-full", true: "bridge-resumed"}[resume]
	return func(r *runner, t target, round int) (Result, error) {
		res := r.newResult(name, t, round)
		var cache tls.ClientSessionCache
		if resume {
			cache = tls.NewLRUClientSessionCache(64)
		}
		cfg := clientTLS(t, r.pki, cache, r.curves)
		var warm handshakeStats
		if err := bridgeEcho(t.Bridge, cfg, r.msgs, &warm)()(); err != nil { // fills the cache
			return res, fmt.Errorf("first handshake: %w", err)
		}
		var st handshakeStats
		up0, _ := fetchUpstreamStats(r.upstreamStats)
		prof := r.startProfile(t, res, r.hsTime)
		cpu := startCPU(t.PID, r.upstreamPID)
		lr := closedLoop(r.conc, r.hsTime, bridgeEcho(t.Bridge, cfg, r.msgs, &st))
		res.CPU = cpu.stop()
		up1, uerr := fetchUpstreamStats(r.upstreamStats)
		upstreamDelta(&res, up0, up1, uerr)
		prof.finish(&res, lr.ok)
		if n := st.total.Load(); n > 0 {
			res.Values["resumed_frac"] = float64(st.resumed.Load()) / float64(n)
		}
		res.Notes["group"], res.Notes["version"] = st.curve, st.version
		return res, loopValues(&res, lr, "hs_s")
	}
}

func (r *runner) spliceTput(streams int) func(*runner, target, int) (Result, error) {
	return func(r *runner, t target, round int) (Result, error) {
		dial := func() (net.Conn, error) { return dialSpliceDownload(t.Splice, r.msgs) }
		return r.tput(fmt.Sprintf("splice-tput-%d", streams), t, round, streams, dial)
	}
}

func (r *runner) bridgeTput(streams int) func(*runner, target, int) (Result, error) {
	return func(r *runner, t target, round int) (Result, error) {
		cfg := clientTLS(t, r.pki, nil, r.curves)
		dial := func() (net.Conn, error) { return dialBridgeDownload(t.Bridge, cfg) }
		return r.tput(fmt.Sprintf("bridge-tput-%d", streams), t, round, streams, dial)
	}
}

func (r *runner) tput(name string, t target, round, streams int, dial func() (net.Conn, error)) (Result, error) {
	res := r.newResult(name, t, round)
	cpu := startCPU(t.PID, r.upstreamPID)
	gbit, err := throughput(streams, r.tputTime, dial)
	res.CPU = cpu.stop()
	res.Values["gbit_s"] = gbit
	return res, err
}
