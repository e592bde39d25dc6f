package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/snigate/snigate/internal/buildinfo"
)

// newManCmd writes the man pages of every command, generated from the
// same definitions as --help (`make man`). It is hidden: a build step,
// not an operator's command.
func newManCmd(a *app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:    "man --out DIR",
		Short:  "Write the man pages of every command to DIR (section 1)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErrorf("--out DIR is required")
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return failed(err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			header := &doc.GenManHeader{Title: "SNIGATE", Section: "1", Source: "snigate " + buildinfo.Get().Version,
				Manual: "snigate manual"}
			if err := doc.GenManTree(root, header, out); err != nil {
				return failed(fmt.Errorf("write man pages to %s: %w", out, err))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for the man pages (required)")
	return cmd
}
