package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/nodeconfig"
)

func newCAInitCmd(a *app) *cobra.Command {
	var out string
	var names []string
	var force, nodes bool
	cmd := &cobra.Command{
		Use:   "init --out DIR [--name NAME ...] [--nodes] [--force]",
		Short: "Create a CA: DIR/ca.crt and DIR/ca.key (mode 0600)",
		Long: `Create a new CA in DIR: ca.crt and ca.key (mode 0600), for serve.ca_cert and
serve.ca_key. With --name, the CA may only sign that name and its one-label
wildcards (X.509 name constraints), so the nodes that trust it trust nothing
else. It refuses to overwrite an existing CA unless --force is given. Prints
where the nodes must install ca.crt.

With --nodes, the CA is for node identity only: it signs the nodes' client
certificates (snigate ca issue-node) and the gateway checks them with
serve.client_ca; nodes need not trust it, so it prints how the gateway and
issue-node use it instead. --name does not apply to it.`,
		Example: `  snigate ca init --out /etc/snigate/ca
  snigate ca init --out /etc/snigate/ca --name registry.example.com --name mirror.example.com
  snigate ca init --out /etc/snigate/nodes-ca --nodes`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			switch {
			case out == "":
				return usageErrorf("--out DIR is required")
			case nodes && len(names) > 0:
				return usageErrorf("--name restricts the names a serving CA signs: a CA for node certificates (--nodes) takes none")
			}
			if err := certs.InitCA(certs.InitCAConfig{Dir: out, Names: names, Force: force}); err != nil {
				return failed(err)
			}
			summary := certs.InitCASummary(out, names, nodeconfig.TrustInstructions)
			if nodes {
				summary = nodeCASummary(out)
			}
			_, err := fmt.Fprint(a.stdout, summary)
			return failed(err)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for ca.crt and ca.key (required)")
	cmd.Flags().StringArrayVar(&names, "name", nil, "restrict the CA to this name and its one-label wildcards (repeatable)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing ca.crt and ca.key")
	cmd.Flags().BoolVar(&nodes, "nodes", false, "a CA for node client certificates (serve.client_ca, ca issue-node), not for serving")
	return cmd
}

// nodeCASummary is what `ca init --nodes` prints: the files, and how the
// gateway and issue-node use a CA that only signs node certificates (no
// node installs it as a trusted CA).
func nodeCASummary(dir string) string {
	caPath := filepath.Join(dir, certs.CACertFileName)
	if abs, err := filepath.Abs(caPath); err == nil {
		caPath = abs
	}
	return fmt.Sprintf("wrote %s (certificate, 0644) and %s (private key, 0600)\n\n"+
		"This CA signs node certificates; nodes do not need to trust it.\n\n"+
		"On the gateway, the bridge route's serve section:\n\n    client_ca: %s\n    client_names: [\"system:node:*\"]\n\n"+
		"Per node, a certificate to copy next to its hosts.toml:\n\n    snigate ca issue-node NODE --ca %s --out DIR\n",
		caPath, filepath.Join(filepath.Dir(caPath), certs.CAKeyFileName), caPath, filepath.Dir(caPath))
}
