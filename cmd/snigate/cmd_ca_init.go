package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/nodeconfig"
)

func init() { addCAVerb(newCAInitCmd) }

func newCAInitCmd(a *app) *cobra.Command {
	var out string
	var names []string
	var force bool
	cmd := &cobra.Command{
		Use:   "init --out DIR [--name NAME ...] [--force]",
		Short: "Create a CA: DIR/ca.crt and DIR/ca.key (mode 0600)",
		Long: `Create a new CA in DIR: ca.crt and ca.key (mode 0600), for serve.ca_cert and
serve.ca_key. With --name, the CA may only sign that name and its one-label
wildcards (X.509 name constraints), so the nodes that trust it trust nothing
else. It refuses to overwrite an existing CA unless --force is given. Prints
where the nodes must install ca.crt.`,
		Example: `  snigate ca init --out /etc/snigate/ca
  snigate ca init --out /etc/snigate/ca --name registry.example.com --name mirror.example.com`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if out == "" {
				return usageErrorf("--out DIR is required")
			}
			if err := certs.InitCA(certs.InitCAConfig{Dir: out, Names: names, Force: force}); err != nil {
				return failed(err)
			}
			_, err := fmt.Fprint(a.stdout, certs.InitCASummary(out, names, nodeconfig.TrustInstructions))
			return failed(err)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for ca.crt and ca.key (required)")
	cmd.Flags().StringArrayVar(&names, "name", nil, "restrict the CA to this name and its one-label wildcards (repeatable)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing ca.crt and ca.key")
	return cmd
}
