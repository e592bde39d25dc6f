package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/snigate/snigate/internal/doctor"
	"github.com/snigate/snigate/internal/gateway"
	"github.com/snigate/snigate/internal/nodeconfig"
)

// defaultNodeOut is node-config's output directory without --out.
const defaultNodeOut = "snigate-node"

func cmdNodeConfig(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("node-config", flag.ContinueOnError)
	file := fs.String("c", "", "configuration file (required)")
	out := fs.String("out", defaultNodeOut, "directory to write the node files to (an existing hosts.toml there is merged)")
	runtime := fs.String("runtime", string(nodeconfig.RuntimeContainerd), "certs.d layout: containerd, docker or podman")
	ca := fs.String("ca", "", "PEM file nodes trust for every bridge route (default: serve.ca_cert, else the top of serve.cert's chain)")
	cert := fs.String("client-cert", "", "the node's client certificate, named for every host (default: only for routes that require node identity, "+nodeconfig.DefaultClientCert+")")
	key := fs.String("client-key", "", "its key (default: in the --client-cert file)")
	if !parse(fs, args, stderr) {
		return exitUsage
	}
	if *file == "" {
		fmt.Fprintln(stderr, "snigate node-config: -c FILE is required")
		return exitUsage
	}
	rt, err := nodeconfig.ParseRuntime(*runtime)
	if err != nil {
		fmt.Fprintf(stderr, "snigate node-config: %v\n", err)
		return exitUsage
	}
	opt := gateway.NodeOptions{Runtime: rt, CA: *ca, ClientCert: *cert, ClientKey: *key, ClientAll: *cert != ""}
	if err := gateway.WriteNodeConfig(*file, *out, opt, stdout); err != nil {
		return failure(stderr, "node-config", err)
	}
	return exitOK
}

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	var c doctor.Config
	fs.StringVar(&c.CA, "ca", "", "PEM file to verify the gateway's certificate with (default: containerd's certs.d for NAME, else the system roots)")
	fs.StringVar(&c.DNS, "dns", "", "the one resolver to ask, ip or ip:port (default: the nameservers of --resolv-conf)")
	fs.StringVar(&c.ClientCert, "client-cert", "", "client certificate to present (default: hosts.toml's client)")
	fs.StringVar(&c.ClientKey, "client-key", "", "its key (default: in the --client-cert file)")
	fs.StringVar(&c.CertsDir, "certs-dir", doctor.DefaultCertsDir, "containerd's certs.d")
	fs.StringVar(&c.ResolvConf, "resolv-conf", doctor.DefaultResolvConf, "the resolver configuration")
	fs.StringVar(&c.HostsFile, "hosts-file", doctor.DefaultHostsFile, "the hosts file")
	fs.DurationVar(&c.Timeout, "timeout", doctor.DefaultTimeout, "of each query, dial and request")
	name, ok := parseOneArg(fs, args, stderr)
	if !ok {
		fmt.Fprintln(stderr, "usage: snigate doctor NAME [--ca FILE] [--dns ADDR]   (NAME: registry.example.com[:port][/repository:tag])")
		return exitUsage
	}
	c.Name = name
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	good, err := doctor.Run(ctx, c, stdout)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "snigate doctor: %v\n", err)
		return exitUsage
	case !good:
		return exitRuntime
	}
	return exitOK
}

// parseOneArg parses flags before and after exactly one positional
// argument ("doctor NAME --ca FILE" as well as "doctor --ca FILE NAME").
func parseOneArg(fs *flag.FlagSet, args []string, stderr io.Writer) (string, bool) {
	fs.SetOutput(stderr)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", false
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) != 1 {
		return "", false
	}
	return pos[0], true
}
