package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/upstream"
)

// ctlUsage lists the ctl verbs of the runtime API (see ctlVerb).
const ctlUsage = `  snigate ctl [--admin ADDR] [-o table|json] routes     routes, names, mode, upstreams, serving certificate and expiry
  snigate ctl [--admin ADDR] [-o table|json] config     configuration file in force, its hash, the last reload
  snigate ctl [--admin ADDR] [-o table|json] reload     reload now; a rejected file prints check's errors, exit 2
  snigate ctl [--admin ADDR] [-o table|json] ready [on|off]   readiness switch: off fails /readyz while still serving
`

// ctlVerb runs one ctl verb with the output format out ("table" or
// "json"); ok is false when args is no verb of ctl.
func ctlVerb(c *admin.Client, args []string, out string, stdout, stderr io.Writer) (code int, ok bool) {
	ctx := context.Background()
	asJSON := out == "json"
	run := func(v any, err error, table func() error) (int, bool) {
		if err != nil {
			return failure(stderr, "ctl", err), true
		}
		if asJSON {
			return writeJSON(stdout, stderr, v), true
		}
		if err := table(); err != nil {
			return failure(stderr, "ctl", err), true
		}
		return exitOK, true
	}
	switch {
	case len(args) == 1 && args[0] == "upstreams":
		st, err := c.Upstreams(ctx)
		return run(st, err, func() error { return admin.WriteUpstreamTable(stdout, st) })
	case len(args) == 1 && args[0] == "answers":
		st, err := c.Answers(ctx)
		return run(st, err, func() error { return admin.WriteAnswerTable(stdout, st) })
	case len(args) == 4 && args[0] == "set":
		state, err := upstream.ParseState(args[3])
		if err != nil {
			fmt.Fprintf(stderr, "snigate ctl set: %v\n", err)
			return exitUsage, true
		}
		st, err := c.SetState(ctx, args[1], args[2], state)
		return run(st, err, func() error { return admin.WriteUpstreamTable(stdout, []upstream.Status{st}) })
	case len(args) == 1 && args[0] == "routes":
		rs, err := c.Routes(ctx)
		return run(rs, err, func() error { return admin.WriteRouteTable(stdout, rs) })
	case len(args) == 1 && args[0] == "config":
		cs, err := c.ConfigStatus(ctx)
		return run(cs, err, func() error { return admin.WriteConfigStatus(stdout, cs) })
	case len(args) == 1 && args[0] == "reload":
		return ctlReload(ctx, c, asJSON, stdout, stderr), true
	case len(args) >= 1 && len(args) <= 2 && args[0] == "ready":
		return ctlReady(ctx, c, args[1:], asJSON, stdout, stderr), true
	}
	return 0, false
}

// ctlReload prints the reload's outcome; a rejected file exits 2 with the
// errors exactly as `snigate check` prints them.
func ctlReload(ctx context.Context, c *admin.Client, asJSON bool, stdout, stderr io.Writer) int {
	res, err := c.Reload(ctx)
	if err != nil {
		return failure(stderr, "ctl", err)
	}
	if asJSON {
		if code := writeJSON(stdout, stderr, res); code != exitOK {
			return code
		}
	}
	if res.Result != admin.ReloadSuccess {
		fmt.Fprintf(stderr, "snigate ctl reload: invalid configuration (%d errors):\n%s\n",
			len(res.Errors), strings.Join(res.Errors, "\n"))
		return exitUsage
	}
	if !asJSON {
		fmt.Fprintln(stdout, "configuration reloaded")
	}
	return exitOK
}

func ctlReady(ctx context.Context, c *admin.Client, args []string, asJSON bool, stdout, stderr io.Writer) int {
	var rd admin.Readiness
	var err error
	switch {
	case len(args) == 0:
		rd, err = c.Readiness(ctx)
	case args[0] == "on" || args[0] == "off":
		rd, err = c.SetReady(ctx, args[0] == "on")
	default:
		fmt.Fprintf(stderr, "snigate ctl ready: want \"on\" or \"off\", got %q\n", args[0])
		return exitUsage
	}
	if err != nil {
		return failure(stderr, "ctl", err)
	}
	if asJSON {
		return writeJSON(stdout, stderr, rd)
	}
	if err := admin.WriteReadiness(stdout, rd); err != nil {
		return failure(stderr, "ctl", err)
	}
	return exitOK
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return failure(stderr, "ctl", err)
	}
	fmt.Fprintf(stdout, "%s\n", data)
	return exitOK
}
