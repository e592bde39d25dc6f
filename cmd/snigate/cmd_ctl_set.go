package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/upstream"
)

func newCtlSetCmd(a *app, o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "set ROUTE UPSTREAM STATE",
		Short: "Set an upstream's state: ready | drain | maint",
		Long: `Set the admin state of one upstream of a route, as ctl upstreams names them:

  ready  normal
  drain  no new connections; established ones continue; checks continue
  maint  no new connections; health checks paused

The state is kept across reloads. Prints the upstream's new status.`,
		Example: `  snigate ctl set registry 10.1.0.10:443 drain
  snigate ctl set registry 10.1.0.10:443 ready`,
		Args:      cobra.ExactArgs(3),
		ValidArgs: nil,
		RunE: func(cmd *cobra.Command, args []string) error {
			state, err := upstream.ParseState(args[2])
			if err != nil {
				return usageErrorf("%v", err)
			}
			st, err := o.client().SetState(cmd.Context(), args[0], args[1], state)
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, st, func(w io.Writer) error {
				return admin.WriteUpstreamTable(w, []upstream.Status{st})
			})
		},
	}
}
