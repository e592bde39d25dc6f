package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/gateway"
)

func init() { addCommand(newCheckCmd) }

func newCheckCmd(a *app) *cobra.Command {
	var file string
	var probe bool
	cmd := &cobra.Command{
		Use:   "check -c FILE [--probe]",
		Short: "Validate a configuration file; --probe also dials every upstream",
		Long: `Validate the configuration FILE as run would load it: the YAML (strict, an
unknown key is an error), every value, and the certificate and key files it
names. Every error names the file, the line and the key, and says what was
expected. Prints "configuration OK" and exits 0 when FILE is valid; exits 2
when it is not. No socket is opened.

With --probe, also dial every upstream of every route as the gateway would
(TCP, then TLS, the mTLS handshake with upstream_tls, and the HTTP check) and
print a table of the results; exits 1 when an upstream fails.`,
		Example: `  snigate check -c /etc/snigate/snigate.yaml
  snigate check -c /etc/snigate/snigate.yaml --probe`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if file == "" {
				return usageErrorf("-c FILE is required")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return failed(gateway.Check(ctx, file, probe, a.stdout))
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "configuration file (required)")
	cmd.Flags().BoolVar(&probe, "probe", false, "also dial every upstream (TCP, TLS, mTLS, HTTP check) and print a table")
	return cmd
}
