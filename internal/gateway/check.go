package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/names"
	"github.com/snigate/snigate/upstream"
)

// ErrProbeFailed is returned by Check when an upstream failed a probe step.
var ErrProbeFailed = errors.New("some upstreams failed the probe")

// Check validates the configuration file (what `snigate check` does) and
// writes a summary, then its warnings, to w: it parses the file, then
// builds everything `run` builds from it (checkBuild), so that a file
// check accepts is a file run starts with. With probe it also dials every
// upstream (Probe). A configuration error, including a file the builders
// refuse, is a config.ErrorList. `snigate check` itself calls Validate and
// Probe, to print warnings apart and as JSON.
func Check(ctx context.Context, path string, probe bool, w io.Writer) error {
	built, rep, err := Validate(path, nil)
	if err != nil {
		return err
	}
	defer built.Close()
	fmt.Fprintln(w, rep.Summary())
	for _, warn := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn.Text)
	}
	if !probe {
		return nil
	}
	return Probe(ctx, built, w)
}

// Checked is what Validate built from a valid configuration file: the
// objects `run` would start with (checkBuild), built with dry side
// effects. Probe dials through them. Close it when done.
type Checked struct {
	// Config is the configuration the objects were built from.
	Config *config.Config
	g      *Gateway
}

// Close releases what the build made (the HTTP bridges' idle upstream
// connections, the shared tiers). A nil *Checked does nothing.
func (c *Checked) Close() {
	if c != nil {
		c.g.gen.Load().retire()
	}
}

// CheckReport is what check found in a configuration file, as `snigate
// check -o json` prints it.
type CheckReport struct {
	File      string         `json:"file"`
	OK        bool           `json:"ok"`        // valid: run would start with it
	Routes    int            `json:"routes"`    // when OK
	Upstreams int            `json:"upstreams"` // when OK
	Errors    []CheckMessage `json:"errors"`    // why not OK
	Warnings  []CheckMessage `json:"warnings"`  // choices run accepts and warns about
}

// CheckMessage is one error or warning: where, and what to change.
type CheckMessage struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"` // 0: the file as a whole
	Key     string `json:"key,omitempty"`  // "": the file as a whole
	Message string `json:"message"`
	Text    string `json:"text"` // "file:line: key: message", as printed
}

func checkMessage(e *config.Error) CheckMessage {
	return CheckMessage{File: e.File, Line: e.Line, Key: e.Key, Message: e.Msg, Text: e.Error()}
}

// Summary is the line check prints for a valid file.
func (r *CheckReport) Summary() string {
	return fmt.Sprintf("%s: configuration OK (%s, %s)", r.File, plural(r.Routes, "route"), plural(r.Upstreams, "upstream"))
}

// plural is "1 route", "2 routes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Validate loads the configuration file path (config.StdinName or "-":
// read from stdin), builds what `run` builds from it (checkBuild) and
// reports what it found: what it built and a report with its warnings
// when it is valid, the report and its config.ErrorList when it is not.
func Validate(path string, stdin io.Reader) (*Checked, *CheckReport, error) {
	var cfg *config.Config
	var err error
	if path == "-" {
		path = config.StdinName
		cfg, err = config.LoadReader(path, stdin)
	} else {
		cfg, err = config.Load(path)
	}
	var built *Checked
	if err == nil {
		built, err = checkBuild(cfg)
	}
	rep := &CheckReport{File: path, Errors: []CheckMessage{}, Warnings: []CheckMessage{}}
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			rep.Errors = append(rep.Errors, checkMessage(e))
		}
	}
	if err != nil {
		return nil, rep, err
	}
	rep.OK = true
	rep.Routes = len(cfg.Routes)
	for _, r := range cfg.Routes {
		rep.Upstreams += len(r.Upstreams)
	}
	for _, w := range Warnings(cfg) {
		rep.Warnings = append(rep.Warnings, checkMessage(w))
	}
	return built, rep, nil
}

// Warnings are what `check` and `run` warn about in cfg: private keys
// others can read, a descriptor limit too low for max_connections, and
// ExposureWarnings.
func Warnings(cfg *config.Config) []*config.Error {
	var out []*config.Error
	for _, w := range KeyFileWarnings(cfg) {
		out = append(out, &config.Error{File: cfg.File, Msg: w})
	}
	if w := FDLimitWarning(cfg); w != "" {
		out = append(out, cfg.ErrorAt("max_connections", "%s", w))
	}
	return append(out, ExposureWarnings(cfg)...)
}

// Probe dials every upstream of every route that Validate built and
// writes a table of the results to w, then, with dns.answer_check,
// checks every answer address once (probeAnswers: warnings, never a
// failed probe). It probes the objects the build made: the pools, the
// bridge routes' client side, the http routes' bridges, the answer
// check.
func Probe(ctx context.Context, built *Checked, w io.Writer) error {
	gen := built.g.gen.Load()
	err := probeAll(ctx, gen, w)
	if aerr := probeAnswers(ctx, &built.g.builder, gen, w); aerr != nil {
		return aerr
	}
	return err
}

// checkBuild builds from cfg what `run` builds before it opens a listener
// (Gateway.assemble: the route table, the pools, the certificate key pairs,
// minters and CA bundles, the DNS handler, the SNI and admin servers)
// with dry side effects: metrics on a throwaway registry, a discarding
// logger, and dryOpener, which opens no file for writing. It opens no
// socket and starts no worker.
func checkBuild(cfg *config.Config) (*Checked, error) {
	discard := slog.New(slog.DiscardHandler)
	g := &Gateway{opts: Options{ConfigFile: cfg.File, Logger: discard}, log: discard, registry: prometheus.NewRegistry()}
	g.metrics = newMetrics(g.registry)
	g.builder = builder{log: discard, metrics: g.metrics, open: dryOpener{}}
	if err := g.assemble(cfg); err != nil {
		return nil, err
	}
	return &Checked{Config: cfg, g: g}, nil
}

type probeRow struct {
	route string
	res   upstream.ProbeResult
}

func probeAll(ctx context.Context, gen *generation, w io.Writer) error {
	cfg := gen.cfg
	var rows []probeRow
	var mu sync.Mutex
	var wg sync.WaitGroup
	routed, err := routedTable(cfg)
	if err != nil {
		return err
	}
	for _, rc := range cfg.Routes {
		pc := probeConfig(cfg, &rc, gen.clients[rc.Name])
		for _, addr := range rc.Upstreams {
			wg.Go(func() {
				res := upstream.Probe(ctx, addr, pc)
				mu.Lock()
				rows = append(rows, probeRow{route: rc.Name, res: res})
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	sortRows(cfg, rows)
	err = writeProbeTable(w, rows, routed)
	for _, n := range nodeIdentityNotes(cfg) {
		fmt.Fprintln(w, n)
	}
	httpFailed := probeHTTPRoutes(ctx, gen, w)
	httpFailed = probeSharedTiers(ctx, gen, w) || httpFailed
	if err == nil && httpFailed {
		return ErrProbeFailed
	}
	return err
}

// nodeIdentityNotes says, for each route with serve.client_ca, that nodes
// need a client certificate to use it: a pull from a node without one
// fails in the handshake, whatever the probe of the upstreams found.
func nodeIdentityNotes(cfg *config.Config) []string {
	var notes []string
	for _, rc := range cfg.Routes {
		s := rc.Serve
		if s.ClientCA == "" {
			continue
		}
		n := fmt.Sprintf("%s: requires node certificates: nodes must present a client certificate (clientAuth) that chains to %s (serve.client_ca)", rc.Name, s.ClientCA)
		if len(s.ClientNames) > 0 {
			n += fmt.Sprintf(", named like %s", strings.Join(s.ClientNames, " or "))
		}
		if s.ClientCRL != "" {
			n += fmt.Sprintf(", not revoked by %s", s.ClientCRL)
		}
		notes = append(notes, n+"; containerd: client = [...] in certs.d/<host>/hosts.toml (deploy/node)")
	}
	return notes
}

// sortRows puts rows in configuration order.
func sortRows(cfg *config.Config, rows []probeRow) {
	order := map[string]int{}
	i := 0
	for _, r := range cfg.Routes {
		for _, u := range r.Upstreams {
			order[r.Name+"\x00"+u] = i
			i++
		}
	}
	for a := 1; a < len(rows); a++ {
		for b := a; b > 0 && order[rows[b].route+"\x00"+rows[b].res.Addr] < order[rows[b-1].route+"\x00"+rows[b-1].res.Addr]; b-- {
			rows[b], rows[b-1] = rows[b-1], rows[b]
		}
	}
}

// routedTable is the names the gateway routes and answers DNS for: the
// routes' SNI names and dns.names (config checked and deduplicated them).
func routedTable(cfg *config.Config) (*names.Table[struct{}], error) {
	var t names.Table[struct{}]
	for _, n := range cfg.RoutedNames() {
		if err := t.Add(n, struct{}{}); err != nil {
			return nil, fmt.Errorf("routed names: %w", err)
		}
	}
	return &t, nil
}

// probeConfig is the probe of one route's upstreams. A bridge route's
// client side (ct; nil on a splice route) is the one the build made for
// traffic, so the probe presents the same certificate and verifies the
// upstream the same way as traffic does.
func probeConfig(cfg *config.Config, rc *config.Route, ct *certs.ClientTLS) upstream.ProbeConfig {
	pc := upstream.ProbeConfig{
		ServerName: checkServerName(rc),
		Check:      upstreamCheck(rc.Health),
		Timeout:    cfg.Timeouts.Connect,
	}
	if ct != nil {
		pc.ClientTLS = ct.Config()
	}
	return pc
}

func writeProbeTable(w io.Writer, rows []probeRow, routed *names.Table[struct{}]) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tUPSTREAM\tTCP\tTLS\tMTLS\tHTTP\tLATENCY\tCERT_EXPIRES")
	failed := false
	var notes []string
	for _, r := range rows {
		p := r.res
		failed = failed || stepFailed(p.TCP) || stepFailed(p.TLS) || stepFailed(p.MTLS) || stepFailed(p.HTTP)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.route, p.Addr,
			stepText(p.TCP), stepText(p.TLS), stepText(p.MTLS), httpText(p),
			latencyText(p), expiryText(p.CertNotAfter))
		notes = append(notes, probeNotes(r, routed)...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if failed {
		return ErrProbeFailed
	}
	return nil
}

// probeNotes reports the other hosts a pull touches: a token realm or a
// blob redirect on a host the gateway does not route fails on the nodes.
func probeNotes(r probeRow, routed *names.Table[struct{}]) []string {
	var notes []string
	note := func(what, host string) {
		_, ok := routed.Lookup(hostOnly(host))
		state := "routed by this gateway"
		if !ok {
			state = "NOT routed: nodes cannot reach it through the gateway; add it to a route's sni (or make sure nodes reach it directly)"
		}
		notes = append(notes, fmt.Sprintf("%s %s: %s %s is %s", r.route, r.res.Addr, what, host, state))
	}
	if h := r.res.AuthRealmHost; h != "" {
		note("token auth realm host", h)
	}
	if h := r.res.RedirectHost; h != "" {
		note("GET /v2/ redirects to host", h)
	}
	for _, e := range stepErrors(r.res) {
		notes = append(notes, fmt.Sprintf("%s %s: %s", r.route, r.res.Addr, e))
	}
	return notes
}

func hostOnly(hostport string) string {
	if i := strings.LastIndexByte(hostport, ':'); i > 0 && !strings.Contains(hostport[i:], "]") {
		return hostport[:i]
	}
	return hostport
}

func latencyText(p upstream.ProbeResult) string {
	if p.Latency <= 0 {
		return "-"
	}
	return p.Latency.Round(100 * time.Microsecond).String()
}

func expiryText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	days := int(time.Until(t).Hours() / 24)
	return fmt.Sprintf("%s (%dd)", t.UTC().Format("2006-01-02"), days)
}

func stepFailed(s upstream.StepResult) bool { return !s.OK && !s.Skipped }

func stepText(s upstream.StepResult) string {
	switch {
	case s.Skipped:
		return "-"
	case s.OK:
		return "ok"
	}
	return "FAIL"
}

func httpText(p upstream.ProbeResult) string {
	switch {
	case p.HTTP.Skipped:
		return "-"
	case p.HTTPStatus != 0 && p.HTTP.OK:
		return fmt.Sprintf("%d", p.HTTPStatus)
	case p.HTTPStatus != 0:
		return fmt.Sprintf("FAIL %d", p.HTTPStatus)
	}
	return stepText(p.HTTP)
}

// stepErrors explains each failed step, and a client certificate the
// upstream demands, in one line each.
func stepErrors(p upstream.ProbeResult) []string {
	var out []string
	for _, s := range []struct {
		name string
		r    upstream.StepResult
	}{{"tcp", p.TCP}, {"tls", p.TLS}, {"mtls", p.MTLS}, {"http", p.HTTP}} {
		if stepFailed(s.r) {
			out = append(out, fmt.Sprintf("%s failed: %s", s.name, s.r.Err))
		}
	}
	if p.ClientCertRequired {
		out = append(out, "the upstream refuses clients without a certificate: the mtls column shows whether it accepts upstream_tls.cert")
	}
	return out
}
