package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
)

func newCtlReadyCmd(a *app, o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "ready [on|off]",
		Short: "Show or switch readiness: off fails /readyz (and leaves DNS answers) while still serving",
		Long: `Without an argument, print what /readyz answers and why. "off" makes
/readyz fail and takes this gateway's own addresses out of its DNS answers
while it goes on serving every connection, so that load balancers and DNS
drain it before maintenance; "on" undoes it. The switch is per process: a
restart starts with it on. -o json prints GET/POST /api/ready as it is.`,
		Example: `  snigate ctl ready
  snigate ctl ready off
  snigate ctl ready on`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rd admin.Readiness
			var err error
			switch {
			case len(args) == 0:
				rd, err = o.client().Readiness(cmd.Context())
			case args[0] == "on" || args[0] == "off":
				rd, err = o.client().SetReady(cmd.Context(), args[0] == "on")
			default:
				return usageErrorf("want \"on\" or \"off\", got %q", args[0])
			}
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, rd, func(w io.Writer) error { return admin.WriteReadiness(w, rd) })
		},
	}
}
