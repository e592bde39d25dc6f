package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/buildinfo"
)

// app is what every command reads: where its output goes and the
// process environment.
type app struct {
	stdin          io.Reader // check -c -
	stdout, stderr io.Writer
	getenv         func(string) string
}

// commands are the constructors of the top-level commands, one file each
// (cmd_<name>.go).
func commands() []func(*app) *cobra.Command {
	return []func(*app) *cobra.Command{newCACmd, newCheckCmd, newCtlCmd, newDemoCmd, newDoctorCmd,
		newManCmd, newNodeConfigCmd, newRunCmd, newVersionCmd}
}

const rootLong = `snigate is an SNI gateway for private networks that must pull container
images from a registry demanding a TLS client certificate.

It reads the server name of each TLS ClientHello on its listeners and either
splices the TCP stream to an upstream (TLS stays end to end), or bridges:
terminates the client's TLS with a certificate the nodes trust and opens a new
TLS session to the registry presenting the edge host's client certificate.
An embedded DNS responder answers the routed names with the gateway's address.

Exit status: 0 success, 1 runtime failure, 2 bad usage or invalid configuration.
Configuration reference: docs/configuration.md (installed in
/usr/share/doc/snigate), JSON Schema docs/snigate.schema.json.`

// newRoot builds the command tree.
func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "snigate",
		Short: "SNI gateway: route TLS by server name, bridge to an mTLS-only registry",
		Long:  rootLong,
		Example: `  snigate check -c /etc/snigate/snigate.yaml
  snigate run -c /etc/snigate/snigate.yaml
  snigate ctl upstreams
  snigate help ctl`,
		Version:       buildinfo.Get().Version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetVersionTemplate(buildinfo.Get().String())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	for _, f := range commands() {
		root.AddCommand(f(a))
	}
	return root
}
