package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
)

// envAdmin names the environment variable that sets ctl's default admin
// address.
const envAdmin = "SNIGATE_ADMIN"

// Values of ctl's --output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// ctlOptions are the flags every ctl verb shares.
type ctlOptions struct {
	admin  string // --admin
	output string // --output: outputTable or outputJSON
}

// client returns the admin API client for --admin.
func (o *ctlOptions) client() *admin.Client { return &admin.Client{Addr: o.admin} }

// resolveAdmin fills in the default of --admin: $SNIGATE_ADMIN, else
// admin.DefaultAddr.
func (o *ctlOptions) resolveAdmin(getenv func(string) string) {
	if o.admin == "" {
		o.admin = getenv(envAdmin)
	}
	if o.admin == "" {
		o.admin = admin.DefaultAddr
	}
}

// write prints v as JSON with -o json, else calls table.
func (o *ctlOptions) write(w io.Writer, v any, table func(io.Writer) error) error {
	if o.output == outputJSON {
		return failed(writeJSON(w, v))
	}
	return failed(table(w))
}

// ctlVerbs are the constructors of the verbs of `snigate ctl`, one file
// each (cmd_ctl_<name>.go).
func ctlVerbs() []func(*app, *ctlOptions) *cobra.Command {
	return []func(*app, *ctlOptions) *cobra.Command{newCtlAnswersCmd, newCtlCacheCmd, newCtlConfigCmd,
		newCtlReadyCmd, newCtlReloadCmd, newCtlRoutesCmd, newCtlSetCmd, newCtlUpstreamsCmd}
}

func newCtlCmd(a *app) *cobra.Command {
	o := &ctlOptions{}
	cmd := &cobra.Command{
		Use:   "ctl [--admin ADDR] VERB",
		Short: "Talk to a running gateway's runtime API (the admin listener)",
		Long: `Talk to the runtime API of a running snigate on its admin listener
(listen.admin): list the routes, upstreams and their health, the DNS answers
and the caches; take an upstream out of service or put it back; show the
configuration in force and reload it; switch readiness off before
maintenance; purge the caches. Every verb prints JSON with -o json.

The address is --admin, else $` + envAdmin + `, else ` + admin.DefaultAddr + `; "unix:/path"
names a unix socket. Flags may come before or after the verb.`,
		Example: `  snigate ctl upstreams
  snigate ctl --admin unix:/run/snigate/admin.sock upstreams -o json
  ` + envAdmin + `=10.0.0.5:9090 snigate ctl set registry 10.1.0.10:443 drain`,
		Args: verbArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError("want a verb", cmd)
		},
		PersistentPreRunE: func(_ *cobra.Command, _ []string) error {
			o.resolveAdmin(a.getenv)
			if o.output != outputTable && o.output != outputJSON {
				return usageErrorf("--output %q: want table or json", o.output)
			}
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&o.admin, "admin", "",
		`admin API address: "host:port" or "unix:/path" (default $`+envAdmin+`, else "`+admin.DefaultAddr+`")`)
	cmd.PersistentFlags().StringVarP(&o.output, "output", "o", outputTable, "output format: table or json")
	for _, f := range ctlVerbs() {
		cmd.AddCommand(f(a, o))
	}
	return cmd
}
