// Command snigate is the SNI gateway: see `snigate help` and
// https://github.com/snigate/snigate. This file parses flags and calls the
// packages that do the work; it holds no logic of its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/demo"
	"github.com/snigate/snigate/internal/gateway"
	"github.com/snigate/snigate/upstream"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

const usage = `usage:
  snigate run   -c FILE [--log-format text|json] [--log-level info]
  snigate check -c FILE [--probe]
  snigate demo  [--keep]
  snigate ca init --out DIR [--name NAME ...] [--force]
  snigate ca issue-node NAME --ca DIR --out DIR [--days N] [--force]
  snigate ctl [--admin ADDR] upstreams
  snigate ctl [--admin ADDR] set ROUTE UPSTREAM STATE    (STATE: ready | drain | maint)
  snigate node-config -c FILE [--out DIR] [--runtime containerd|docker|podman]
  snigate doctor NAME [--ca FILE] [--dns ADDR]
  snigate ctl [--admin ADDR] answers                     (dns.answer_check: addresses given in DNS answers)
  snigate ctl [--admin ADDR] cache [purge [DIGEST]]      (http.cache: size, entries, hit ratio; purge one digest or all)
  snigate version
`

// Exit statuses (interface.md).
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) int{
		"run": cmdRun, "check": cmdCheck, "demo": cmdDemo, "ca": cmdCA,
		"ctl": cmdCtl, "version": cmdVersion,
		"node-config": cmdNodeConfig, "doctor": cmdDoctor,
	}
	if f := cmds[args[0]]; f != nil {
		return f(args[1:], stdout, stderr)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "snigate: unknown command %q\n%s", args[0], usage)
	return exitUsage
}

// parse parses flags, reporting problems as bad usage.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) bool {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "snigate %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return false
	}
	return true
}

// failure reports err and picks the exit status: 2 for an invalid
// configuration, 1 for anything else.
func failure(stderr io.Writer, cmd string, err error) int {
	var cerr config.ErrorList
	if errors.As(err, &cerr) {
		fmt.Fprintf(stderr, "snigate %s: invalid configuration (%d errors):\n%v\n", cmd, len(cerr), err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "snigate %s: %v\n", cmd, err)
	return exitRuntime
}

func cmdRun(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	file := fs.String("c", "", "configuration file (required)")
	format := fs.String("log-format", "text", "log format: text or json")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if !parse(fs, args, stderr) {
		return exitUsage
	}
	if *file == "" {
		fmt.Fprintln(stderr, "snigate run: -c FILE is required")
		return exitUsage
	}
	logger, err := gateway.NewLogger(stderr, *format, *level)
	if err != nil {
		fmt.Fprintf(stderr, "snigate run: %v\n", err)
		return exitUsage
	}
	g, err := gateway.New(gateway.Options{ConfigFile: *file, Logger: logger})
	if err != nil {
		return failure(stderr, "run", err)
	}
	if err := g.Run(context.Background()); err != nil {
		return failure(stderr, "run", err)
	}
	return exitOK
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	file := fs.String("c", "", "configuration file (required)")
	probe := fs.Bool("probe", false, "also dial every upstream (TCP, TLS, mTLS, HTTP check) and print a table")
	if !parse(fs, args, stderr) {
		return exitUsage
	}
	if *file == "" {
		fmt.Fprintln(stderr, "snigate check: -c FILE is required")
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := gateway.Check(ctx, *file, *probe, stdout); err != nil {
		return failure(stderr, "check", err)
	}
	return exitOK
}

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	keep := fs.Bool("keep", false, "stay up after the tour and print commands to try it by hand")
	if !parse(fs, args, stderr) {
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, demo.Options{Keep: *keep, Out: stdout}); err != nil {
		return failure(stderr, "demo", err)
	}
	return exitOK
}

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func cmdCA(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "issue-node" {
		return cmdIssueNode(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "init" {
		fmt.Fprintf(stderr, "snigate ca: want \"ca init --out DIR\" or \"ca issue-node NAME --ca DIR --out DIR\"\n%s", usage)
		return exitUsage
	}
	fs := flag.NewFlagSet("ca init", flag.ContinueOnError)
	out := fs.String("out", "", "directory for ca.crt and ca.key (required)")
	force := fs.Bool("force", false, "overwrite an existing ca.crt/ca.key")
	var names stringList
	fs.Var(&names, "name", "restrict the CA to this name and its one-label wildcards (repeatable)")
	if !parse(fs, args[1:], stderr) {
		return exitUsage
	}
	if *out == "" {
		fmt.Fprintln(stderr, "snigate ca init: --out DIR is required")
		return exitUsage
	}
	if err := certs.InitCA(certs.InitCAConfig{Dir: *out, Names: names, Force: *force}); err != nil {
		return failure(stderr, "ca init", err)
	}
	fmt.Fprint(stdout, certs.InitCASummary(*out, names))
	return exitOK
}

// cmdIssueNode is `snigate ca issue-node NAME`: a kubelet-style client
// certificate for a node, for routes with serve.client_ca.
func cmdIssueNode(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ca issue-node", flag.ContinueOnError)
	caDir := fs.String("ca", "", "directory of the node CA's ca.crt and ca.key (snigate ca init) (required)")
	out := fs.String("out", "", "directory for NAME.crt and NAME.key (required)")
	days := fs.Int("days", int(certs.DefaultNodeValidity/(24*time.Hour)), "validity in days")
	force := fs.Bool("force", false, "overwrite an existing NAME.crt/NAME.key")
	name := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if !parse(fs, args, stderr) {
		return exitUsage
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 || name == "" {
		fmt.Fprintln(stderr, "snigate ca issue-node: want exactly one NAME (the node's name): snigate ca issue-node NAME --ca DIR --out DIR")
		return exitUsage
	}
	if *caDir == "" || *out == "" || *days < 1 {
		fmt.Fprintln(stderr, "snigate ca issue-node: --ca DIR and --out DIR are required, and --days must be at least 1")
		return exitUsage
	}
	certPath, keyPath, err := certs.IssueNode(certs.IssueNodeConfig{Name: name, CADir: *caDir, Out: *out,
		Validity: time.Duration(*days) * 24 * time.Hour, Force: *force})
	if err != nil {
		return failure(stderr, "ca issue-node", err)
	}
	fmt.Fprint(stdout, certs.IssueNodeSummary(name, *caDir, certPath, keyPath))
	return exitOK
}

func cmdCtl(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ctl", flag.ContinueOnError)
	addr := fs.String("admin", admin.DefaultAddr, `admin API address: "host:port" or "unix:/path"`)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	c := &admin.Client{Addr: *addr}
	ctx := context.Background()
	switch rest := fs.Args(); {
	case len(rest) == 1 && rest[0] == "upstreams":
		st, err := c.Upstreams(ctx)
		if err != nil {
			return failure(stderr, "ctl", err)
		}
		if err := admin.WriteUpstreamTable(stdout, st); err != nil {
			return failure(stderr, "ctl", err)
		}
		return exitOK
	case len(rest) == 1 && rest[0] == "answers":
		st, err := c.Answers(ctx)
		if err == nil {
			err = admin.WriteAnswerTable(stdout, st)
		}
		if err != nil {
			return failure(stderr, "ctl", err)
		}
		return exitOK
	case len(rest) >= 1 && rest[0] == "cache":
		return ctlCache(ctx, c, rest[1:], stdout, stderr)
	case len(rest) == 4 && rest[0] == "set":
		state, err := upstream.ParseState(rest[3])
		if err != nil {
			fmt.Fprintf(stderr, "snigate ctl set: %v\n", err)
			return exitUsage
		}
		st, err := c.SetState(ctx, rest[1], rest[2], state)
		if err != nil {
			return failure(stderr, "ctl", err)
		}
		return writeTable(stdout, stderr, st)
	}
	fmt.Fprintf(stderr, "snigate ctl: want \"upstreams\", \"answers\", \"cache\" or \"set ROUTE UPSTREAM STATE\"\n%s", usage)
	return exitUsage
}

func writeTable(stdout, stderr io.Writer, st upstream.Status) int {
	if err := admin.WriteUpstreamTable(stdout, []upstream.Status{st}); err != nil {
		return failure(stderr, "ctl", err)
	}
	return exitOK
}

func cmdVersion(_ []string, stdout, _ io.Writer) int {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && v == "" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(stdout, "snigate %s\n", v)
	return exitOK
}
