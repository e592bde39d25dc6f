package main

import (
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The fleet scenarios (issue 31, bench/fleet/run.sh): nodes behind a fleet
// of gateways, with a shared cache tier or with a local cache each. One
// invocation is one measurement; the script interleaves them and sums up.
//
//	loadgen fleet -pki DIR -mode pull -name shared -round 1 -gateways A,B,C -upstream-stats S
//	loadgen fleet -pki DIR -mode hit -name shared-hit -round 1 -gateways A -nodes 8
//
// pull: -nodes nodes (node i through gateway i mod len(-gateways)) GET the
// layer once at once over fresh connections; hit: the same with every
// node on the first gateway. It prints one line:
//
//	MODE NAME ROUND NODES last_s registry_layers MB/s errors
//
// last_s is the time until the last node had the whole layer,
// registry_layers the layer's bytes the registry sent in layer sizes, MB/s
// the bytes the nodes got over last_s.

// fleetRun is one fleet measurement's settings.
type fleetRun struct {
	mode, name    string
	round, nodes  int
	gateways      []string
	upstreamStats string
	layer         descriptor
	timeout       time.Duration
}

func cmdFleet(args []string) error {
	fs := flag.NewFlagSet("fleet", flag.ExitOnError)
	var fr fleetRun
	dir := fs.String("pki", "", "directory written by `loadgen certs` (required)")
	fs.StringVar(&fr.mode, "mode", "pull", "pull (nodes spread over the gateways) or hit (every node on the first)")
	fs.StringVar(&fr.name, "name", "fleet", "what is measured, the line's second field")
	fs.IntVar(&fr.round, "round", 1, "the round's number, the line's third field")
	fs.IntVar(&fr.nodes, "nodes", 8, "nodes (HTTP/1.1 clients, each on a fresh connection) getting the layer at once")
	gws := fs.String("gateways", "", "comma-separated http addresses of the gateways (required)")
	fs.StringVar(&fr.upstreamStats, "upstream-stats", "", "address of `loadgen upstream -stats` (registry bytes); empty: not counted")
	layerMiB := fs.Int64("layer-mib", 200, "size of the layer in MiB (as `loadgen upstream -layer-mib`)")
	fs.DurationVar(&fr.timeout, "timeout", 5*time.Minute, "time one node's GET of the layer may take")
	fs.Parse(args)
	switch {
	case *dir == "" || *gws == "":
		return fmt.Errorf("-pki and -gateways are required")
	case fr.mode != "pull" && fr.mode != "hit":
		return fmt.Errorf("-mode: want pull or hit, got %q", fr.mode)
	case fr.nodes <= 0 || *layerMiB <= 0:
		return fmt.Errorf("-nodes and -layer-mib: want positive numbers, got %d and %d", fr.nodes, *layerMiB)
	}
	fr.gateways = strings.Split(*gws, ",")
	size := *layerMiB << 20
	fr.layer = descriptor{Digest: newCacheLayer(size).digest(), Size: size}
	p, err := loadPKI(*dir)
	if err != nil {
		return err
	}
	return fr.run(p)
}

// run measures once and prints the line.
func (fr *fleetRun) run(p *material) error {
	var ts transports
	defer ts.closeAll()
	clients := make([]*http.Client, fr.nodes)
	for i := range clients {
		addr := fr.gateways[0]
		if fr.mode == "pull" {
			addr = fr.gateways[i%len(fr.gateways)]
		}
		clients[i] = ts.new(addr, httpClientTLS(target{Name: fr.name, HTTP: addr}, p, nil), false)
		clients[i].Transport.(*http.Transport).ResponseHeaderTimeout = fr.timeout
	}
	up0, uerr := fetchUpstreamStats(fr.upstreamStats)
	pl := pullAll(target{Name: fr.name}, clients, blobPath(fr.layer.Digest), fr.layer.Size, fr.timeout)
	layers := -1.0
	if up1, err := fetchUpstreamStats(fr.upstreamStats); fr.upstreamStats != "" && uerr == nil && err == nil {
		layers = float64(up1.BlobBytes-up0.BlobBytes) / float64(fr.layer.Size)
	}
	mbps := 0.0
	if pl.last > 0 {
		mbps = float64(pl.bytes) / 1e6 / pl.last.Seconds()
	}
	fmt.Printf("%s %s %d %d %.3f %.2f %.1f %d\n", fr.mode, fr.name, fr.round, fr.nodes, pl.last.Seconds(), layers, mbps, pl.errs)
	if pl.firstErr != nil {
		return fmt.Errorf("%d of %d nodes failed: %w", pl.errs, fr.nodes, pl.firstErr)
	}
	return nil
}
