// Command loadgen is snigate's side-by-side benchmark load generator (issue
// 8). bench/run.sh drives it; by hand:
//
//	loadgen certs -dir DIR                 # CA, serve, upstream and client certificates
//	loadgen upstream -pki DIR -splice ADDR -bridge ADDR
//	loadgen run -pki DIR -out results.jsonl -upstream-pid PID \
//	    -target name=haproxy,splice=ADDR,bridge=ADDR,pid=PID [-target ...]
//	loadgen report -in results.jsonl -out results.md
//	loadgen fleet -pki DIR -mode pull|hit -gateways ADDR,ADDR,ADDR   # bench/fleet/run.sh
//	perf script -F comm,period,ip,sym,dso | loadgen syscalls -comm NAME -conns N
//
// It imports only the standard library, so that it measures every proxy
// with the same code.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen certs|upstream|run|report|syscalls|fleet [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"certs": cmdCerts, "upstream": cmdUpstream, "run": cmdRun, "report": cmdReport, "syscalls": cmdSyscalls,
		"fleet": cmdFleet,
	}
	cmd, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "loadgen: unknown command %q (want certs, upstream, run, report, syscalls or fleet)\n", os.Args[1])
		os.Exit(2)
	}
	if err := cmd(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "loadgen %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func cmdCerts(args []string) error {
	fs := flag.NewFlagSet("certs", flag.ExitOnError)
	dir := fs.String("dir", "", "directory to write the certificates into (required)")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("-dir is required")
	}
	return writePKI(*dir)
}

func cmdUpstream(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ExitOnError)
	dir := fs.String("pki", "", "directory written by `loadgen certs` (required)")
	spliceAt := fs.String("splice", "127.0.0.1:0", "address of the plain TCP upstream (splice routes)")
	bridgeAt := fs.String("bridge", "127.0.0.1:0", "address of the mTLS upstream (bridge routes)")
	statsAt := fs.String("stats", "", "address serving the bridge upstream's handshake counters (JSON); empty: none")
	httpAt := fs.String("http", "", "address of the mTLS registry (http scenarios); empty: none")
	bigMiB := fs.Int64("big-blob-mib", 1024, "size of the registry's large blob in MiB (generated, never held in memory)")
	layerMiB := fs.Int64("layer-mib", 200, "size of the cache scenarios' layer in MiB (generated; 0: none)")
	authAt := fs.String("http-auth", "", "address of the same registry behind token auth, mTLS (issue 30); empty: none")
	authPlainAt := fs.String("http-auth-plain", "", "address of the same registry behind token auth, no client certificate; empty: none")
	tokenAt := fs.String("token", "127.0.0.1:0", "address of the token service of -http-auth and -http-auth-plain (GET /stats: its counters)")
	fs.Parse(args)
	p, err := loadPKI(*dir)
	if err != nil {
		return err
	}
	if *bigMiB <= 0 {
		return fmt.Errorf("-big-blob-mib: want a positive size, got %d", *bigMiB)
	}
	if *layerMiB < 0 {
		return fmt.Errorf("-layer-mib: want a size of 0 or more, got %d", *layerMiB)
	}
	sl, err := net.Listen("tcp", *spliceAt)
	if err != nil {
		return err
	}
	bl, err := net.Listen("tcp", *bridgeAt)
	if err != nil {
		sl.Close()
		return err
	}
	u := newUpstream(p)
	if *statsAt != "" {
		stl, err := net.Listen("tcp", *statsAt)
		if err != nil {
			return err
		}
		defer stl.Close()
		go http.Serve(stl, &u.stats)
	}
	reg, err := startRegistry(*httpAt, *bigMiB<<20, *layerMiB<<20, p, &u.stats)
	if err != nil {
		sl.Close()
		bl.Close()
		return err
	}
	if reg != nil && (*authAt != "" || *authPlainAt != "") {
		lns, err := startAuthRegistry(*authAt, *authPlainAt, *tokenAt, p, reg.reg, &u.stats)
		if err != nil {
			return err
		}
		defer closeListeners(lns)
		fmt.Printf("auth registry ready: token service %s\n", lns[0].Addr())
	}
	fmt.Printf("upstream ready: splice %s bridge %s%s\n", sl.Addr(), bl.Addr(), reg.describe())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() { <-ctx.Done(); sl.Close(); bl.Close(); reg.close() }()
	errc := make(chan error, 3)
	go func() { errc <- u.serve(sl, u.handleSplice) }()
	go func() { errc <- u.serve(bl, u.handleBridge) }()
	go func() { errc <- reg.serve() }()
	for range 3 {
		if e := <-errc; err == nil {
			err = e
		}
	}
	return err // connections still open die with the process
}

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	r := &runner{log: os.Stdout}
	dir := fs.String("pki", "", "directory written by `loadgen certs` (required)")
	fs.Var((*targetList)(&r.targets), "target", "name=N,splice=ADDR,bridge=ADDR,http=ADDR,pid=P[,direct=1][,pprof=ADDR] (repeat, in round order)")
	fs.IntVar(&r.upstreamPID, "upstream-pid", 0, "PID of `loadgen upstream` (for its CPU share)")
	fs.StringVar(&r.upstreamStats, "upstream-stats", "", "address of `loadgen upstream -stats` (upstream-leg resumption and key exchange)")
	groups := fs.String("client-groups", "default", "key exchanges the TLS client offers: default (this Go's: X25519MLKEM768, X25519, ...) or x25519")
	fs.StringVar(&r.out, "out", "results.jsonl", "JSON-lines file the results are appended to")
	fs.StringVar(&r.pprofDir, "pprof-dir", "", "save profiles of targets with pprof= here")
	scen := fs.String("scenarios", "all", "comma-separated: splice-rate, splice-latency, splice-tput, bridge-full, bridge-resumed, bridge-tput, http-manifest, http-blobs, http-bigblob, http-* (all three), cache-pull, cache-hit, cache-* (both), idle-mem (every idle-mem-N of -idle-counts), all")
	fs.IntVar(&r.rounds, "rounds", 3, "rounds (each target once per round)")
	fs.IntVar(&r.firstRound, "first-round", 1, "number of the first round (for runs split across restarts)")
	fs.IntVar(&r.conc, "conc", 32, "concurrent connections in the rate and handshake scenarios")
	fs.DurationVar(&r.rateTime, "rate-time", 5*time.Second, "duration of one splice rate measurement")
	fs.Float64Var(&r.latRate, "lat-rate", 2000, "connections per second of the open-loop splice-latency scenario (below every proxy's capacity)")
	fs.DurationVar(&r.hsTime, "hs-time", 4*time.Second, "duration of one handshake measurement")
	fs.DurationVar(&r.tputTime, "tput-time", 3*time.Second, "duration of one throughput measurement")
	streams := fs.String("streams", "1,8", "stream counts of the throughput scenarios")
	fs.DurationVar(&r.httpTime, "http-time", 4*time.Second, "duration of one http-manifest or http-blobs measurement")
	httpStreams := fs.String("http-streams", "1,4", "connection counts of the http-bigblob scenarios")
	idleCounts := fs.String("idle-counts", "1000,5000,20000", "idle tunnels of the idle-memory scenarios (idle-mem-N, one per count; idle-mem picks them all)")
	idleReads := fs.String("idle-reads", "0.2s,2s", "when the proxy's RSS is read in idle-mem-N, after the last tunnel opened")
	layerMiB := fs.Int64("layer-mib", 200, "size of the cache scenarios' layer in MiB (as `loadgen upstream -layer-mib`)")
	fs.IntVar(&r.pullNodes, "pull-nodes", 8, "nodes pulling the layer at once in cache-pull")
	fs.DurationVar(&r.pullTimeout, "pull-timeout", 5*time.Minute, "time one node's pull of the layer may take")
	cacheStreams := fs.String("cache-streams", "1,8", "stream counts of the cache-hit scenarios")
	fs.DurationVar(&r.pause, "pause", 300*time.Millisecond, "pause between measurements")
	fs.Float64Var(&r.maxOther, "max-other", 50, "measure again when other work used more than this CPU (% of one core)")
	fs.IntVar(&r.retries, "retries", 2, "extra attempts of a measurement disturbed by other work")
	fs.DurationVar(&r.retryBudget, "retry-budget", 90*time.Second, "total time the extra attempts may take")
	fs.Parse(args)
	if len(r.targets) == 0 {
		return fmt.Errorf("no -target")
	}
	var err error
	if r.streams, err = parseInts(*streams); err != nil {
		return fmt.Errorf("-streams: %w", err)
	}
	if r.httpStreams, err = parseInts(*httpStreams); err != nil {
		return fmt.Errorf("-http-streams: %w", err)
	}
	if r.cacheStreams, err = parseInts(*cacheStreams); err != nil {
		return fmt.Errorf("-cache-streams: %w", err)
	}
	if r.idleCounts, err = parseInts(*idleCounts); err != nil {
		return fmt.Errorf("-idle-counts: %w", err)
	}
	if r.idleReads, err = parseDurations(*idleReads); err != nil {
		return fmt.Errorf("-idle-reads: %w", err)
	}
	if r.pullNodes <= 0 {
		return fmt.Errorf("-pull-nodes: want a positive count, got %d", r.pullNodes)
	}
	if *layerMiB < 0 {
		return fmt.Errorf("-layer-mib: want a size of 0 or more, got %d", *layerMiB)
	}
	r.scenarios = strings.Split(*scen, ",")
	if *layerMiB > 0 && r.wantsCache() { // the digest costs one read of the layer
		r.layer = descriptor{Digest: newCacheLayer(*layerMiB << 20).digest(), Size: *layerMiB << 20}
	}
	switch *groups {
	case "default":
	case "x25519":
		r.curves = []tls.CurveID{tls.X25519}
	default:
		return fmt.Errorf("-client-groups: want default or x25519, got %q", *groups)
	}
	if r.pki, err = loadPKI(*dir); err != nil {
		return err
	}
	hello, err := captureClientHello(spliceName)
	if err != nil {
		return err
	}
	r.msgs = newMessages(hello)
	return r.run()
}

func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	in := fs.String("in", "", "comma-separated JSON-lines result files (required)")
	out := fs.String("out", "", "markdown file to write (default: stdout only)")
	header := fs.String("header", "", "markdown file to put first (machine, versions, settings)")
	dns := fs.String("dns", "", "output of bench/dns/run.sh to include")
	subjects := fs.String("subject", "snigate,snigate-x25519", "comma-separated targets the issue's targets apply to (each gets ratio and verdict columns)")
	base := fs.String("base", "haproxy", "the target every ratio column is relative to")
	refs := fs.String("refs", "haproxy,nginx", "targets whose best value is the subject's target")
	cacheBase := fs.String("cache-base", "snigate", "the target the cache scenarios' rows are judged against (the bridge without a cache)")
	goals := fs.String("goal-subjects", "snigate,snigate-base", "targets of issue 21's target table, after then before (those present get columns)")
	threads := fs.String("threads", "snigate=2,snigate-x25519=2,haproxy=2,nginx=2,sniproxy=1", "worker threads per target (to tell a saturated proxy)")
	fs.Parse(args)
	results, err := readResults(strings.Split(*in, ","))
	if err != nil {
		return err
	}
	th, err := parseThreads(*threads)
	if err != nil {
		return err
	}
	rep := report{
		sum: summarize(results),
		cmp: comparison{subjects: strings.Split(*subjects, ","), base: *base, refs: strings.Split(*refs, ","), cacheBase: *cacheBase,
			goals: strings.Split(*goals, ",")},
		threads: th,
		cores:   runtime.NumCPU(),
	}
	if rep.header, err = readOptional(*header); err != nil {
		return err
	}
	if rep.dns, err = readOptional(*dns); err != nil {
		return err
	}
	return rep.write(*out)
}

func parseThreads(s string) (map[string]int, error) {
	m := map[string]int{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		var n int
		if _, err := fmt.Sscan(v, &n); !ok || err != nil {
			return nil, fmt.Errorf("-threads: want name=N, got %q", kv)
		}
		m[k] = n
	}
	return m, nil
}

func readOptional(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	return string(b), err
}
