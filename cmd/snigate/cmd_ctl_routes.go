package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
)

func newCtlRoutesCmd(a *app, o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "routes",
		Short: "Table of routes: names, mode, upstreams, serving certificate and its expiry",
		Long: `Print every route of the configuration in force: its SNI names, mode, balance,
upstreams, and for bridge routes the serving certificate's subject and expiry.
-o json prints GET /api/routes as it is.`,
		Example: `  snigate ctl routes
  snigate ctl routes -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rs, err := o.client().Routes(cmd.Context())
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, rs, func(w io.Writer) error { return admin.WriteRouteTable(w, rs) })
		},
	}
}
