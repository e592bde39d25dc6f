package admin

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteRouteTable writes routes as an aligned table for `snigate ctl
// routes`:
//
//	ROUTE     MODE    NAMES                 UPSTREAMS        CERT                        EXPIRES
//	registry  bridge  registry.example.com  10.1.0.10:443    CN=registry.example.com     2027-03-01 (89d)
//
// CERT is the serving certificate's subject ("ca: SUBJECT" for a route
// that mints its leaves), "-" for a splice route; a default route's name
// is marked with "*".
func WriteRouteTable(w io.Writer, routes []Route) error {
	return writeRouteTable(w, routes, time.Now())
}

func writeRouteTable(w io.Writer, routes []Route, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tMODE\tNAMES\tUPSTREAMS\tBALANCE\tCERT\tEXPIRES")
	for _, r := range routes {
		name := r.Route
		if r.Default {
			name += "*"
		}
		cert, expires := "-", "-"
		if r.Cert != nil {
			cert = r.Cert.Subject
			if r.Cert.Source == "ca" {
				cert = "ca: " + cert
			}
			expires = expiry(r.Cert.NotAfter, now)
		}
		fmt.Fprintln(tw, strings.Join([]string{cell(name), cell(r.Mode), cell(strings.Join(r.Names, ",")),
			cell(strings.Join(r.Upstreams, ",")), cell(r.Balance), cell(cert), expires}, "\t"))
	}
	return tw.Flush()
}

// expiry is a date and the days left, or "EXPIRED".
func expiry(t, now time.Time) string {
	days := int(t.Sub(now).Hours() / 24)
	if t.Before(now) {
		return t.UTC().Format(time.DateOnly) + " (EXPIRED)"
	}
	return fmt.Sprintf("%s (%dd)", t.UTC().Format(time.DateOnly), days)
}

// WriteConfigStatus writes the configuration status for `snigate ctl
// config`, one "key: value" a line.
func WriteConfigStatus(w io.Writer, cs ConfigStatus) error {
	fmt.Fprintf(w, "file:       %s\nsha256:     %s\nloaded_at:  %s\nroutes:     %d\n",
		cs.File, cs.SHA256, cs.LoadedAt.Format(time.RFC3339), cs.Routes)
	if cs.LastReload == nil {
		_, err := fmt.Fprintln(w, "last_reload: none since start")
		return err
	}
	r := cs.LastReload
	fmt.Fprintf(w, "last_reload: %s at %s (%s)\n", r.Result, r.At.Format(time.RFC3339), r.Reason)
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  %s\n", e)
	}
	return nil
}

// WriteReadiness writes the readiness for `snigate ctl ready`.
func WriteReadiness(w io.Writer, rd Readiness) error {
	state := "ready"
	if !rd.Ready {
		state = "not ready: " + rd.Reason
	}
	_, err := fmt.Fprintf(w, "switch: %s\nreadyz: %s\n", rd.Switch, state)
	return err
}
