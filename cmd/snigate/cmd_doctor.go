package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/doctor"
)

// errPullWouldFail is doctor's result when a step failed: exit status 1,
// and nothing more printed (the FAIL lines say what to change).
var errPullWouldFail = errors.New("a pull would not work: see the FAIL lines above")

const doctorUsage = "usage: snigate doctor NAME... [--ca FILE] [--dns ADDR]   (NAME: registry.example.com[:port][/repository:tag])"

func newDoctorCmd(a *app) *cobra.Command {
	var c doctor.Config
	cmd := &cobra.Command{
		Use:   "doctor NAME... [--ca FILE] [--dns ADDR]",
		Short: "Run on a node: would a pull of NAME through the gateway work? One line per step",
		Long: `Run on a node to check, step by step, that a pull of NAME
(registry.example.com[:port][/repository:tag]) through the gateway works:
the resolver configuration, the DNS answers (A, AAAA, HTTPS), TCP and TLS to
the gateway, the certificate chain and name, GET /v2/, and the hosts a pull
also touches (the token realm, blob redirects). Each line is ok, warn or FAIL,
the step (resolver, dns, tcp, tls, http, realm, manifest, redirect), what it found, and
on failure what to change. Several NAMEs (the registries one gateway serves,
a route each) are checked one after the other, each under "== NAME".
docker.io/... references are checked as a pull makes them: against
registry-1.docker.io, library/ for one-component repositories. Exits 0 only
when every pull would work, 1 when a step failed, 2 for a bad NAME.`,
		Example: `  snigate doctor registry.example.com
  snigate doctor registry.example.com/team/app:v1 --dns 10.0.0.5
  snigate doctor registry.example.com --ca /etc/containerd/certs.d/registry.example.com/snigate-ca.crt
  snigate doctor docker.io/library/alpine:3 ghcr.io/org/app:1 registry.example.com`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%s", doctorUsage)
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			good, err := doctor.RunNames(ctx, c, args, a.stdout)
			switch {
			case err != nil:
				return usageErrorf("%v", err)
			case !good:
				return &exitError{status: exitRuntime, err: errPullWouldFail, silent: true}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.CA, "ca", "", "PEM file to verify the gateway's certificate with (default: containerd's certs.d for NAME, else the system roots)")
	f.StringVar(&c.DNS, "dns", "", "the one resolver to ask, ip or ip:port (default: the nameservers of --resolv-conf)")
	f.StringVar(&c.ClientCert, "client-cert", "", "client certificate to present (default: hosts.toml's client)")
	f.StringVar(&c.ClientKey, "client-key", "", "its key (default: in the --client-cert file)")
	f.StringVar(&c.CertsDir, "certs-dir", doctor.DefaultCertsDir, "containerd's certs.d")
	f.StringVar(&c.ResolvConf, "resolv-conf", doctor.DefaultResolvConf, "the resolver configuration")
	f.StringVar(&c.HostsFile, "hosts-file", doctor.DefaultHostsFile, "the hosts file")
	f.DurationVar(&c.Timeout, "timeout", doctor.DefaultTimeout, "of each query, dial and request")
	return cmd
}
