package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/buildinfo"
)

func newVersionCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date and Go version",
		Long: `Print which build this is: the version, the VCS commit and the build date
that the build stamped (make build, the Dockerfile and the package do), the Go
version and the platform. The first line is "snigate VERSION". The same as
snigate --version; the admin API's snigate_build_info metric carries it too.`,
		Example: `  snigate version
  snigate version -o json`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			info := buildinfo.Get()
			switch output {
			case "text":
				_, err := fmt.Fprint(a.stdout, info.String())
				return failed(err)
			case outputJSON:
				return failed(writeJSON(a.stdout, info))
			}
			return usageErrorf("--output %q: want text or json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
