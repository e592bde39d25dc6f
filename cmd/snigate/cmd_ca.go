package main

import "github.com/spf13/cobra"

// caVerbs are the constructors of the subcommands of `snigate ca`, one
// file each (cmd_ca_<name>.go).
func caVerbs() []func(*app) *cobra.Command {
	return []func(*app) *cobra.Command{newCAInitCmd, newCAIssueNodeCmd}
}

func newCACmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca COMMAND",
		Short: "Manage the local CA that mints bridge serving certificates",
		Long: `Manage local certificate authorities: one for bridge routes, whose
serve.ca_cert and serve.ca_key mint a serving certificate per SNI name and
whose ca.crt the nodes trust; and one for node identity (serve.client_ca),
which issues the nodes' client certificates.`,
		Example: `  snigate ca init --out /etc/snigate/ca --name registry.example.com
  snigate ca init --out /etc/snigate/nodes-ca
  snigate ca issue-node worker-1 --ca /etc/snigate/nodes-ca --out ./nodes`,
		Args: verbArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError(`want a command: "ca init --out DIR" or "ca issue-node NAME --ca DIR --out DIR"`, cmd)
		},
	}
	for _, f := range caVerbs() {
		cmd.AddCommand(f(a))
	}
	return cmd
}
