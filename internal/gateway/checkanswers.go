package gateway

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

// probeAnswers, for `snigate check --probe` with dns.answer_check, runs
// one round of the answer check the build made and writes a table of it.
// Without listen.dns the build made none (run would not run it): b, the
// same builder, makes it. A failure is a warning, not a failed probe: the
// gateway being checked may be this one, not started yet, or another one
// that is down for now.
func probeAnswers(ctx context.Context, b *builder, gen *generation, w io.Writer) error {
	cfg := gen.cfg
	if cfg.DNS.AnswerCheck == nil {
		return nil
	}
	c := gen.answers
	if c == nil {
		var err error
		if c, err = b.buildAnswerCheck(cfg); err != nil {
			return err
		}
	}
	c.CheckOnce(ctx)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DNS ANSWER\tPORT\tCHECK\tERROR")
	for _, st := range c.Status() {
		result := "ok"
		if st.LastError != "" {
			result = "warn"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", st.Address, cfg.DNS.AnswerCheck.Port, result, cellText(st.LastError))
	}
	return tw.Flush()
}

func cellText(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
