package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/demo"
)

func newDemoCmd(a *app) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo [--keep]",
		Short: "Self-contained tour on loopback: an mTLS-only registry, the gateway, a pull",
		Long: `Run a self-contained tour on 127.0.0.1: start a registry that accepts only
clients with a certificate, the gateway in bridge mode in front of it and its
DNS responder, then pull an image through them, printing each step.
Nothing outside the loopback interface is touched.

With --keep, stay up after the tour and print commands to try it by hand,
until SIGINT or SIGTERM.`,
		Example: `  snigate demo
  snigate demo --keep`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return failed(demo.Run(ctx, demo.Options{Keep: keep, Out: a.stdout}))
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "stay up after the tour and print commands to try it by hand")
	return cmd
}
