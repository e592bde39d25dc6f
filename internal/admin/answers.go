package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snigate/snigate/dnsresponder"
)

// answerLister is what GET /api/answers needs from the gateway: the
// dns.answer addresses as the answer check sees them, nil when the
// configuration has no dns.answer_check.
type answerLister interface {
	Answers() []dnsresponder.AnswerStatus
}

func (s *Server) listAnswers(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Answers == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	st := s.cfg.Answers.Answers()
	if st == nil {
		writeError(w, http.StatusNotFound, "no dns.answer_check in the configuration: every dns.answer address is answered, unchecked; add dns.answer_check (and listen.dns) to check them")
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// Answers returns the dns.answer addresses as the gateway's answer check
// sees them. Without dns.answer_check it is an *APIError with StatusCode
// 404.
func (c *Client) Answers(ctx context.Context) ([]dnsresponder.AnswerStatus, error) {
	var st []dnsresponder.AnswerStatus
	if err := c.do(ctx, http.MethodGet, "/api/answers", nil, &st); err != nil {
		return nil, err
	}
	return st, nil
}

// answerHeader is the first line of WriteAnswerTable.
var answerHeader = []string{"ADDRESS", "HEALTH", "ANSWERED", "LAST_CHECK", "LAST_ERROR"}

// WriteAnswerTable writes st as an aligned table, one address a line, for
// `snigate ctl answers`:
//
//	ADDRESS   HEALTH  ANSWERED            LAST_CHECK  LAST_ERROR
//	10.0.0.5  up      yes                 1s ago      -
//	10.0.0.6  down    no                  1s ago      connect: connection refused
//
// ANSWERED is "yes" when DNS answers give the address now (a down one too
// when none is up), "no", or "no (own, draining)".
func WriteAnswerTable(w io.Writer, st []dnsresponder.AnswerStatus) error {
	return writeAnswerTable(w, st, time.Now())
}

func writeAnswerTable(w io.Writer, st []dnsresponder.AnswerStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(answerHeader, "\t"))
	for _, s := range st {
		fmt.Fprintln(tw, strings.Join([]string{cell(s.Address), health(s.Healthy), answered(s), age(s.LastCheck, now), cell(s.LastError)}, "\t"))
	}
	return tw.Flush()
}

func answered(s dnsresponder.AnswerStatus) string {
	switch {
	case s.Answered:
		return "yes"
	case s.LeftOut:
		return "no (own, draining)"
	}
	return "no"
}
