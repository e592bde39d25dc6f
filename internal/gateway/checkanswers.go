package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/config"
)

// probeAnswers, for `snigate check --probe` with dns.answer_check, runs
// one round of the answer check and writes a table of it. A failure is a
// warning, not a failed probe: the gateway being checked may be this one,
// not started yet, or another one that is down for now.
func probeAnswers(ctx context.Context, cfg *config.Config, w io.Writer) error {
	if cfg.DNS.AnswerCheck == nil {
		return nil
	}
	discard := slog.New(slog.DiscardHandler)
	g := &Gateway{log: discard, metrics: newMetrics(prometheus.NewRegistry())}
	c, err := g.buildAnswerCheck(cfg)
	if err != nil {
		return err
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
