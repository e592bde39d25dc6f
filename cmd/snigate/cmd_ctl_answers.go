package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
)

func newCtlAnswersCmd(a *app, o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "answers",
		Short: "Table of dns.answer addresses: up or not, given in DNS answers or not",
		Long: `Print every address of dns.answer as dns.answer_check sees it: whether its
gateway is up, whether the DNS responder gives it in its answers now, and the
time and error of its last check. -o json prints GET /api/answers as it is.`,
		Example: `  snigate ctl answers
  snigate ctl answers -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := o.client().Answers(cmd.Context())
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, st, func(w io.Writer) error { return admin.WriteAnswerTable(w, st) })
		},
	}
}
