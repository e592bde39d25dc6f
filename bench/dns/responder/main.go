// Command responder runs snigate's DNS responder alone, for load runs
// (bench/dns/run.sh): one routed name answered with one address, nothing
// forwarded. It prints "ready" on stdout once UDP and TCP are served and
// stops on SIGINT or SIGTERM.
//
//	responder -listen 127.0.0.1:15353 -name registry.example.test -answer 192.0.2.10 [-cpuprofile FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/names"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "responder:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:15353", "UDP and TCP address to answer on")
	name := flag.String("name", "registry.example.test", "the routed name")
	answer := flag.String("answer", "192.0.2.10", "the address given for it")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()

	h, err := newHandler(*name, *answer)
	if err != nil {
		return err
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return serve(*listen, h)
}

func newHandler(name, answer string) (*dnsresponder.Handler, error) {
	addr, err := netip.ParseAddr(answer)
	if err != nil {
		return nil, fmt.Errorf("-answer: %w", err)
	}
	var routed names.Table[struct{}]
	if err := routed.Add(name, struct{}{}); err != nil {
		return nil, fmt.Errorf("-name: %w", err)
	}
	return dnsresponder.New(dnsresponder.Config{
		Names:   &routed,
		Answer:  []netip.Addr{addr},
		TTL:     30 * time.Second,
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Metrics: dnsresponder.NewMetrics(nil), // counted, as in snigate run
	})
}

func serve(listen string, h *dnsresponder.Handler) error {
	pc, err := net.ListenPacket("udp", listen)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		pc.Close()
		return err
	}
	srv := dnsresponder.NewServer(h, nil)
	started := make(chan struct{}, 2)
	srv.NotifyStartedFunc = func(net.Addr) { started <- struct{}{} }
	errs := make(chan error, 2)
	go func() { errs <- srv.ServeUDP(pc) }()
	go func() { errs <- srv.ServeTCP(ln) }()
	<-started
	<-started
	fmt.Println("ready")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case err := <-errs:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
