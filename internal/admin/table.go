package admin

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snigate/snigate/upstream"
)

// tableHeader is the first line of WriteUpstreamTable.
var tableHeader = []string{"ROUTE", "UPSTREAM", "STATE", "HEALTH", "ACTIVE", "LAST_CHECK", "LAST_ERROR"}

// WriteUpstreamTable writes st as an aligned table, one upstream a line in
// the order given, for `snigate ctl upstreams`:
//
//	ROUTE     UPSTREAM        STATE  HEALTH  ACTIVE  LAST_CHECK  LAST_ERROR
//	registry  10.1.0.10:443   ready  up      3       2s ago      -
//
// LAST_CHECK is the age of the last health check ("never" before the first).
func WriteUpstreamTable(w io.Writer, st []upstream.Status) error {
	return writeUpstreamTable(w, st, time.Now())
}

func writeUpstreamTable(w io.Writer, st []upstream.Status, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tableHeader, "\t"))
	for _, s := range st {
		fmt.Fprintln(tw, strings.Join(tableRow(s, now), "\t"))
	}
	return tw.Flush()
}

func tableRow(s upstream.Status, now time.Time) []string {
	return []string{
		cell(s.Route),
		cell(s.Upstream),
		cell(string(s.State)),
		health(s.Healthy),
		strconv.FormatInt(s.ActiveConnections, 10),
		age(s.LastCheck, now),
		cell(s.LastError),
	}
}

// cell keeps a value on one line and in one column: tabs and line breaks
// become spaces, and "" becomes "-".
func cell(v string) string {
	v = strings.Join(strings.FieldsFunc(v, func(r rune) bool {
		return r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
	}), " ")
	if v == "" {
		return "-"
	}
	return v
}

func health(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

// age formats how long ago t was: "2s ago", "3m4s ago", "5h6m ago", "2d3h ago".
func age(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := max(now.Sub(t), 0).Round(time.Second)
	days, d := d/(24*time.Hour), d%(24*time.Hour)
	h, d := d/time.Hour, d%time.Hour
	m, sec := d/time.Minute, (d%time.Minute)/time.Second
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh ago", days, h)
	case h > 0:
		return fmt.Sprintf("%dh%dm ago", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%ds ago", m, sec)
	}
	return fmt.Sprintf("%ds ago", sec)
}
