package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
)

func newCtlUpstreamsCmd(a *app, o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "upstreams",
		Short: "Table of routes, upstreams, state, health and checks",
		Long: `Print every upstream of every route: its admin state (ready, drain, maint),
whether it passes its health checks, its open connections, and the time and
error of its last check. -o json prints GET /api/upstreams as it is.`,
		Example: `  snigate ctl upstreams
  snigate ctl upstreams -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := o.client().Upstreams(cmd.Context())
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, st, func(w io.Writer) error { return admin.WriteUpstreamTable(w, st) })
		},
	}
}
