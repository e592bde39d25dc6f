package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
)

func newCtlReloadCmd(a *app, o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "reload",
		Short: "Reload the configuration now; a rejected file prints check's errors (exit 2)",
		Long: `Ask the gateway to re-read its configuration file (POST /api/reload), as
SIGHUP does. A file the gateway rejects is not applied: the errors are printed
exactly as snigate check prints them, and the exit status is 2.
-o json prints the API's answer as it is.`,
		Example: `  snigate ctl reload
  snigate ctl reload -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := o.client().Reload(cmd.Context())
			if err != nil {
				return failed(err)
			}
			if o.output == outputJSON {
				if err := writeJSON(a.stdout, res); err != nil {
					return failed(err)
				}
			}
			if res.Result != admin.ReloadSuccess {
				return &exitError{status: exitUsage, noHint: true, err: fmt.Errorf("%s:\n%s",
					invalidConfiguration(len(res.Errors)), strings.Join(res.Errors, "\n"))}
			}
			if o.output != outputJSON {
				fmt.Fprintln(a.stdout, "configuration reloaded")
			}
			return nil
		},
	}
}
