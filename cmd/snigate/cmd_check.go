package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/gateway"
)

// checkLong is the help text of check.
const checkLong = `Validate the configuration FILE as run would load it: the YAML (strict, an
unknown key is an error), every value, and the certificate and key files it
names; then build everything run builds from it. Every error names the file,
the line and the key, and says what was expected. Prints "configuration OK"
and exits 0 when FILE is valid; exits 2 when it is not. No socket is opened.
-c - reads the file from standard input (relative file names in it are then
relative to the working directory).

Warnings (choices run accepts and warns about too: an open resolver, an admin
API on every address, a bridge route that lends the edge identity to every
client, private keys others can read) go to standard error, one a line.
-o json prints one JSON object instead: {file, ok, routes, upstreams,
errors, warnings}, each error and warning {file, line, key, message, text};
the exit status is the same.

With --probe, also dial every upstream of every route as the gateway would
(TCP, then TLS, the mTLS handshake with upstream_tls, and the HTTP check) and
print a table of the results; exits 1 when an upstream fails.`

func newCheckCmd(a *app) *cobra.Command {
	var file, output string
	var probe bool
	cmd := &cobra.Command{
		Use:   "check -c FILE [--probe] [-o json]",
		Short: "Validate a configuration file; --probe also dials every upstream",
		Long:  checkLong,
		Example: `  snigate check -c /etc/snigate/snigate.yaml
  snigate check -c /etc/snigate/snigate.yaml --probe
  snigate check -c - -o json < snigate.yaml`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return runCheck(a, file, output, probe)
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", `configuration file (required; "-": standard input)`)
	cmd.Flags().BoolVar(&probe, "probe", false, "also dial every upstream (TCP, TLS, mTLS, HTTP check) and print a table")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// runCheck validates file (output "text" or "json") and, with probe,
// dials every upstream of what it built.
func runCheck(a *app, file, output string, probe bool) error {
	switch {
	case file == "":
		return usageErrorf("-c FILE is required")
	case output != "text" && output != outputJSON:
		return usageErrorf("--output %q: want text or json", output)
	case output == outputJSON && probe:
		return usageErrorf("--probe prints a table: use it without -o json")
	}
	built, rep, err := gateway.Validate(file, a.stdin)
	defer built.Close()
	if output == outputJSON {
		return checkJSON(a, rep, err)
	}
	if err != nil {
		return failed(err)
	}
	fmt.Fprintln(a.stdout, rep.Summary())
	for _, w := range rep.Warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w.Text)
	}
	if !probe {
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return failed(gateway.Probe(ctx, built, a.stdout))
}

// checkJSON prints the report and exits as check does: 2 for an invalid
// file (the report holds its errors), 1 when the file could not be
// checked at all.
func checkJSON(a *app, rep *gateway.CheckReport, err error) error {
	if len(rep.Errors) == 0 && err != nil {
		return failed(err)
	}
	if werr := writeJSON(a.stdout, rep); werr != nil {
		return failed(werr)
	}
	if err != nil {
		return &exitError{status: exitUsage, err: err, silent: true}
	}
	return nil
}
