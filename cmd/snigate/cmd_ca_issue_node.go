package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/certs"
)

func newCAIssueNodeCmd(a *app) *cobra.Command {
	var caDir, out string
	var days int
	var force bool
	cmd := &cobra.Command{
		Use:   "issue-node NAME --ca DIR --out DIR [--days N] [--force]",
		Short: "Issue a node's client certificate (CN system:node:NAME) from a CA",
		Long: `Issue a kubelet-style client certificate for the node NAME (subject
CN system:node:NAME, O system:nodes, client authentication only), signed by
the CA in --ca (ca.crt and ca.key, as snigate ca init writes them), into
--out as NAME.crt and NAME.key (mode 0600). For routes with serve.client_ca:
it prints the hosts.toml client line for the node and the client_ca line for
the gateway. It refuses to overwrite an existing pair unless --force is given.`,
		Example: `  snigate ca issue-node worker-1 --ca /etc/snigate/nodes-ca --out ./nodes
  snigate ca issue-node worker-2 --ca /etc/snigate/nodes-ca --out ./nodes --days 90`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("want exactly one NAME (the node's name): snigate ca issue-node NAME --ca DIR --out DIR")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if caDir == "" || out == "" || days < 1 {
				return usageErrorf("--ca DIR and --out DIR are required, and --days must be at least 1")
			}
			certPath, keyPath, err := certs.IssueNode(certs.IssueNodeConfig{Name: args[0], CADir: caDir, Out: out,
				Validity: time.Duration(days) * 24 * time.Hour, Force: force})
			if err != nil {
				return failed(err)
			}
			_, err = fmt.Fprint(a.stdout, certs.IssueNodeSummary(args[0], caDir, certPath, keyPath))
			return failed(err)
		},
	}
	cmd.Flags().StringVar(&caDir, "ca", "", "directory of the node CA's ca.crt and ca.key (snigate ca init) (required)")
	cmd.Flags().StringVar(&out, "out", "", "directory for NAME.crt and NAME.key (required)")
	cmd.Flags().IntVar(&days, "days", int(certs.DefaultNodeValidity/(24*time.Hour)), "validity in days")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing NAME.crt and NAME.key")
	return cmd
}
