// Command snigate-pprof runs the gateway the way `snigate run` does and
// also serves net/http/pprof and expvar (/debug/vars, with runtime
// MemStats and heap_live_bytes, the heap the last GC found live) on a
// loopback address. It exists only for the benchmarks:
// bench/run.sh (PROFILE=1) and bench/profile.sh profile snigate through it,
// so snigate itself carries no profiling endpoint.
//
//	snigate-pprof -c snigate.yaml -pprof 127.0.0.1:6060 -log-level warn
package main

import (
	"context"
	"expvar" // /debug/vars
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // /debug/pprof/
	"os"
	"runtime/metrics"

	"github.com/snigate/snigate/internal/gateway"
)

func init() {
	expvar.Publish("heap_live_bytes", expvar.Func(heapLive))
}

// heapLive is the heap the last collection marked live: unlike MemStats'
// HeapAlloc, nothing allocated since (the profile a pprof request builds)
// is in it.
func heapLive() any {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return uint64(0)
	}
	return s[0].Value.Uint64()
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "snigate-pprof: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	file := flag.String("c", "", "snigate configuration file (required)")
	addr := flag.String("pprof", "127.0.0.1:6060", "address of the pprof and expvar endpoint")
	level := flag.String("log-level", "warn", "log level: debug, info, warn or error")
	flag.Parse()
	logger, err := gateway.NewLogger(os.Stderr, "text", *level)
	if err != nil {
		return err
	}
	g, err := gateway.New(gateway.Options{ConfigFile: *file, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.DefaultServeMux}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	err = g.Run(context.Background())
	srv.Close()
	<-done
	return err
}
