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
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
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
	f := parseUpstreamFlags(args)
	p, err := loadPKI(f.dir)
	if err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	sl, err := net.Listen("tcp", f.spliceAt)
	if err != nil {
		return err
	}
	bl, err := net.Listen("tcp", f.bridgeAt)
	if err != nil {
		sl.Close()
		return err
	}
	u := newUpstream(p)
	if f.statsAt != "" {
		stl, err := net.Listen("tcp", f.statsAt)
		if err != nil {
			return err
		}
		defer stl.Close()
		go http.Serve(stl, &u.stats)
	}
	reg, err := startRegistry(f.httpAt, f.bigMiB<<20, f.layerMiB<<20, p, &u.stats)
	if err != nil {
		sl.Close()
		bl.Close()
		return err
	}
	if reg != nil && (f.authAt != "" || f.authPlainAt != "") {
		lns, err := startAuthRegistry(f.authAt, f.authPlainAt, f.tokenAt, p, reg.reg, &u.stats)
		if err != nil {
			return err
		}
		defer closeListeners(lns)
		fmt.Printf("auth registry ready: token service %s\n", lns[0].Addr())
	}
	fmt.Printf("upstream ready: splice %s bridge %s%s\n", sl.Addr(), bl.Addr(), reg.describe())
	return serveUpstream(u, sl, bl, reg)
}

// serveUpstream serves the splice and bridge upstreams and the registry
// until SIGTERM or SIGINT closes their listeners, and returns the first
// error of the three.
func serveUpstream(u *upstream, sl, bl net.Listener, reg *runningRegistry) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() { <-ctx.Done(); sl.Close(); bl.Close(); reg.close() }()
	errc := make(chan error, 3)
	go func() { errc <- u.serve(sl, u.handleSplice) }()
	go func() { errc <- u.serve(bl, u.handleBridge) }()
	go func() { errc <- reg.serve() }()
	var err error
	for range 3 {
		if e := <-errc; err == nil {
			err = e
		}
	}
	return err // connections still open die with the process
}

func cmdRun(args []string) error {
	r := &runner{log: os.Stdout}
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	l := bindRunFlags(fs, r)
	fs.Parse(args)
	if err := l.apply(r); err != nil {
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
