package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"strings"
	"time"
)

// upstreamFlags are the flags of `loadgen upstream`.
type upstreamFlags struct {
	dir, spliceAt, bridgeAt, statsAt, httpAt string
	authAt, authPlainAt, tokenAt             string
	bigMiB, layerMiB                         int64
}

// parseUpstreamFlags parses the flags of `loadgen upstream`.
func parseUpstreamFlags(args []string) upstreamFlags {
	var f upstreamFlags
	fs := flag.NewFlagSet("upstream", flag.ExitOnError)
	fs.StringVar(&f.dir, "pki", "", "directory written by `loadgen certs` (required)")
	fs.StringVar(&f.spliceAt, "splice", "127.0.0.1:0", "address of the plain TCP upstream (splice routes)")
	fs.StringVar(&f.bridgeAt, "bridge", "127.0.0.1:0", "address of the mTLS upstream (bridge routes)")
	fs.StringVar(&f.statsAt, "stats", "", "address serving the bridge upstream's handshake counters (JSON); empty: none")
	fs.StringVar(&f.httpAt, "http", "", "address of the mTLS registry (http scenarios); empty: none")
	fs.Int64Var(&f.bigMiB, "big-blob-mib", 1024, "size of the registry's large blob in MiB (generated, never held in memory)")
	fs.Int64Var(&f.layerMiB, "layer-mib", 200, "size of the cache scenarios' layer in MiB (generated; 0: none)")
	fs.StringVar(&f.authAt, "http-auth", "", "address of the same registry behind token auth, mTLS (issue 30); empty: none")
	fs.StringVar(&f.authPlainAt, "http-auth-plain", "", "address of the same registry behind token auth, no client certificate; empty: none")
	fs.StringVar(&f.tokenAt, "token", "127.0.0.1:0", "address of the token service of -http-auth and -http-auth-plain (GET /stats: its counters)")
	fs.Parse(args)
	return f
}

// check refuses the sizes no registry can serve.
func (f upstreamFlags) check() error {
	if f.bigMiB <= 0 {
		return fmt.Errorf("-big-blob-mib: want a positive size, got %d", f.bigMiB)
	}
	if f.layerMiB < 0 {
		return fmt.Errorf("-layer-mib: want a size of 0 or more, got %d", f.layerMiB)
	}
	return nil
}

// runLists are the flags of `loadgen run` that need parsing after
// flag.Parse before they are the runner's: lists, sizes and choices.
type runLists struct {
	dir, groups, scen                  string
	streams, httpStreams, cacheStreams string
	idleCounts, idleReads              string
	layerMiB                           int64
}

// bindRunFlags defines the flags of `loadgen run` on fs: the runner's
// own straight into r, the rest into the runLists it returns.
func bindRunFlags(fs *flag.FlagSet, r *runner) *runLists {
	l := &runLists{}
	fs.StringVar(&l.dir, "pki", "", "directory written by `loadgen certs` (required)")
	fs.Var((*targetList)(&r.targets), "target", "name=N,splice=ADDR,bridge=ADDR,http=ADDR,pid=P[,direct=1][,pprof=ADDR] (repeat, in round order)")
	fs.IntVar(&r.upstreamPID, "upstream-pid", 0, "PID of `loadgen upstream` (for its CPU share)")
	fs.StringVar(&r.upstreamStats, "upstream-stats", "", "address of `loadgen upstream -stats` (upstream-leg resumption and key exchange)")
	fs.StringVar(&l.groups, "client-groups", "default", "key exchanges the TLS client offers: default (this Go's: X25519MLKEM768, X25519, ...) or x25519")
	fs.StringVar(&r.out, "out", "results.jsonl", "JSON-lines file the results are appended to")
	fs.StringVar(&r.pprofDir, "pprof-dir", "", "save profiles of targets with pprof= here")
	fs.BoolVar(&r.liveMem, "live-mem", false, "http-bigblob, targets with pprof=: sample the live heap (live_kib_req, heap profiles) instead of a CPU profile, whose 1 MiB buffer would blur it")
	fs.StringVar(&l.scen, "scenarios", "all", "comma-separated: splice-rate, splice-latency, splice-tput, bridge-full, bridge-resumed, bridge-tput, http-manifest, http-blobs, http-bigblob, http-* (all three), cache-pull, cache-hit, cache-* (both), idle-mem (every idle-mem-N of -idle-counts), all")
	fs.IntVar(&r.rounds, "rounds", 3, "rounds (each target once per round)")
	fs.IntVar(&r.firstRound, "first-round", 1, "number of the first round (for runs split across restarts)")
	fs.IntVar(&r.conc, "conc", 32, "concurrent connections in the rate and handshake scenarios")
	fs.StringVar(&l.streams, "streams", "1,8", "stream counts of the throughput scenarios")
	fs.StringVar(&l.httpStreams, "http-streams", "1,4", "connection counts of the http-bigblob scenarios")
	fs.StringVar(&l.idleCounts, "idle-counts", "1000,5000,20000", "idle tunnels of the idle-memory scenarios (idle-mem-N, one per count; idle-mem picks them all)")
	fs.StringVar(&l.idleReads, "idle-reads", "0.2s,2s", "when the proxy's RSS is read in idle-mem-N, after the last tunnel opened")
	fs.Int64Var(&l.layerMiB, "layer-mib", 200, "size of the cache scenarios' layer in MiB (as `loadgen upstream -layer-mib`)")
	fs.IntVar(&r.pullNodes, "pull-nodes", 8, "nodes pulling the layer at once in cache-pull")
	fs.StringVar(&l.cacheStreams, "cache-streams", "1,8", "stream counts of the cache-hit scenarios")
	bindTimingFlags(fs, r)
	return l
}

// bindTimingFlags defines the durations, rates and retry rules of `loadgen
// run` on fs, straight into r.
func bindTimingFlags(fs *flag.FlagSet, r *runner) {
	fs.DurationVar(&r.rateTime, "rate-time", 5*time.Second, "duration of one splice rate measurement")
	fs.Float64Var(&r.latRate, "lat-rate", 2000, "connections per second of the open-loop splice-latency scenario (below every proxy's capacity)")
	fs.DurationVar(&r.hsTime, "hs-time", 4*time.Second, "duration of one handshake measurement")
	fs.DurationVar(&r.tputTime, "tput-time", 3*time.Second, "duration of one throughput measurement")
	fs.DurationVar(&r.httpTime, "http-time", 4*time.Second, "duration of one http-manifest or http-blobs measurement")
	fs.DurationVar(&r.pullTimeout, "pull-timeout", 5*time.Minute, "time one node's pull of the layer may take")
	fs.DurationVar(&r.pause, "pause", 300*time.Millisecond, "pause between measurements")
	fs.Float64Var(&r.maxOther, "max-other", 50, "measure again when other work used more than this CPU (% of one core)")
	fs.IntVar(&r.retries, "retries", 2, "extra attempts of a measurement disturbed by other work")
	fs.DurationVar(&r.retryBudget, "retry-budget", 90*time.Second, "total time the extra attempts may take")
}

// apply checks the parsed flags and sets r from them: targets, lists,
// the cache layer, the client's key exchanges and the PKI.
func (l *runLists) apply(r *runner) error {
	if len(r.targets) == 0 {
		return fmt.Errorf("no -target")
	}
	if err := l.parseLists(r); err != nil {
		return err
	}
	if r.pullNodes <= 0 {
		return fmt.Errorf("-pull-nodes: want a positive count, got %d", r.pullNodes)
	}
	if l.layerMiB < 0 {
		return fmt.Errorf("-layer-mib: want a size of 0 or more, got %d", l.layerMiB)
	}
	r.scenarios = strings.Split(l.scen, ",")
	if l.layerMiB > 0 && r.wantsCache() { // the digest costs one read of the layer
		r.layer = descriptor{Digest: newCacheLayer(l.layerMiB << 20).digest(), Size: l.layerMiB << 20}
	}
	switch l.groups {
	case "default":
	case "x25519":
		r.curves = []tls.CurveID{tls.X25519}
	default:
		return fmt.Errorf("-client-groups: want default or x25519, got %q", l.groups)
	}
	var err error
	r.pki, err = loadPKI(l.dir)
	return err
}

// parseLists parses the comma-separated counts and durations into r.
func (l *runLists) parseLists(r *runner) error {
	var err error
	if r.streams, err = parseInts(l.streams); err != nil {
		return fmt.Errorf("-streams: %w", err)
	}
	if r.httpStreams, err = parseInts(l.httpStreams); err != nil {
		return fmt.Errorf("-http-streams: %w", err)
	}
	if r.cacheStreams, err = parseInts(l.cacheStreams); err != nil {
		return fmt.Errorf("-cache-streams: %w", err)
	}
	if r.idleCounts, err = parseInts(l.idleCounts); err != nil {
		return fmt.Errorf("-idle-counts: %w", err)
	}
	if r.idleReads, err = parseDurations(l.idleReads); err != nil {
		return fmt.Errorf("-idle-reads: %w", err)
	}
	return nil
}
