package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
)

func newCtlConfigCmd(a *app, o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "The configuration file in force, its SHA-256, when it was loaded, the last reload",
		Long: `Print which configuration file the gateway runs, the SHA-256 of what it
loaded, when, and the outcome of the last reload with its errors.
-o json prints GET /api/config as it is.`,
		Example: `  snigate ctl config
  snigate ctl config -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := o.client().ConfigStatus(cmd.Context())
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, cs, func(w io.Writer) error { return admin.WriteConfigStatus(w, cs) })
		},
	}
}
