package deploy

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

const (
	rulesPath     = "prometheus/snigate-rules.yaml"
	rulesTestPath = "prometheus/snigate-rules.test.yaml"
	dashboardPath = "grafana/snigate-dashboard.json"
)

// knownMetrics are the series snigate exports: the contract in
// the contract: docs/configuration.md and docs/operations.md, the extra series the gateway adds, and the
// Go and process collectors' series these files use. Value: label names.
var knownMetrics = map[string][]string{
	// the contract
	"snigate_connections_total":                    {"listener", "route", "result"},
	"snigate_active_connections":                   {"route"},
	"snigate_bytes_total":                          {"route", "direction"},
	"snigate_upstream_up":                          {"route", "upstream"},
	"snigate_upstream_connect_seconds":             {"route"},
	"snigate_client_hello_seconds":                 {},
	"snigate_dns_queries_total":                    {"qtype", "result"},
	"snigate_certificate_expiry_timestamp_seconds": {"route", "role"},
	"snigate_config_reloads_total":                 {"result"},
	// beyond the contract
	"snigate_upstream_checks_total":                        {"route", "upstream", "result"},
	"snigate_certificate_reload_failures_total":            {"route", "role"},
	"snigate_connection_duration_seconds":                  {"route"},
	"snigate_dns_query_duration_seconds":                   {"result"},
	"snigate_upstream_dial_failures_total":                 {"route", "upstream"},
	"snigate_ready":                                        {},
	"snigate_dns_upstream_up":                              {"upstream"},
	"snigate_dns_upstream_requests_total":                  {"upstream", "result"},
	"snigate_dns_tcp_connections_refused_total":            {},
	"snigate_dns_tcp_connections_evicted_total":            {},
	"snigate_upstream_state":                               {"route", "upstream", "state"},
	"snigate_certificate_reloads_total":                    {"route", "role"},
	"snigate_certificate_mints_total":                      {"route", "result"},
	"snigate_admin_requests_total":                         {"handler", "code"},
	"snigate_admin_connections_shed_total":                 {"reason"},
	"snigate_admin_state_changes_total":                    {"route", "state"},
	"snigate_config_last_reload_successful":                {},
	"snigate_config_last_reload_success_timestamp_seconds": {},
	"snigate_build_info":                                   {"version", "revision", "goversion"},
	"snigate_pending_handshakes":                           {"kind"},
	"snigate_upstream_dials_in_progress":                   {"route"},
	"snigate_client_auth_failures_total":                   {"route", "reason"},
	"snigate_dns_answer_up":                                {"address"},
	"snigate_http_requests_total":                          {"route", "kind", "code"},
	"snigate_http_request_duration_seconds":                {"route", "kind"},
	"snigate_http_requests_in_flight":                      {"route"},
	"snigate_http_refused_total":                           {"route", "reason"},
	"snigate_http_upstream_retries_total":                  {"route"},
	"snigate_http_redirects_total":                         {"route", "result"},
	"snigate_http_audit_dropped_total":                     {"reason"},
	"snigate_http_h2_reset_floods_total":                   {"route"},
	"snigate_http_auth_tokens_total":                       {"route", "result"},
	"snigate_cache_requests_total":                         {"route", "result"},
	"snigate_verify_total":                                 {"route", "result"},
	"snigate_cache_bytes":                                  {"route"},
	"snigate_cache_upstream_bytes_total":                   {"route"},
	"snigate_cache_entries":                                {"route"},
	"snigate_cache_fills_total":                            {"route", "result"},
	"snigate_cache_errors_total":                           {"route", "reason"},
	"snigate_cache_corrupt_total":                          {"route"},
	"snigate_cache_evicted_bytes_total":                    {"route"},
	"snigate_cache_shared_requests_total":                  {"route", "result"},
	"snigate_cache_shared_bytes_total":                     {"route", "direction"},
	// client_golang's Go and process collectors
	"process_open_fds":              {},
	"process_max_fds":               {},
	"process_resident_memory_bytes": {},
	"go_goroutines":                 {},
	// Prometheus's own per-target series
	"up": {},
}

var histograms = []string{
	"snigate_upstream_connect_seconds", "snigate_client_hello_seconds",
	"snigate_connection_duration_seconds", "snigate_dns_query_duration_seconds",
	"snigate_http_request_duration_seconds",
}

// metricLabels returns the labels a series name may carry, histogram
// suffixes included, and whether the name is known at all.
func metricLabels(name string) ([]string, bool) {
	target := []string{"instance", "job"}
	if l, ok := knownMetrics[name]; ok {
		return append(target, l...), true
	}
	for _, h := range histograms {
		switch name {
		case h + "_bucket":
			return append(append(target, "le"), knownMetrics[h]...), true
		case h + "_sum", h + "_count":
			return append(target, knownMetrics[h]...), true
		}
	}
	return nil, false
}

// checkExpr parses a PromQL expression and checks every series name and
// every label it selects or groups by.
func checkExpr(expr string) []error {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return []error{fmt.Errorf("%q: %w", expr, err)}
	}
	var errs []error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			errs = append(errs, checkSelector(n)...)
		case *parser.AggregateExpr:
			errs = append(errs, checkGrouping(n)...)
		}
		return nil
	})
	return errs
}

func checkSelector(vs *parser.VectorSelector) []error {
	labels, ok := metricLabels(vs.Name)
	if !ok {
		return []error{fmt.Errorf("series %q is not one snigate exports (see knownMetrics)", vs.Name)}
	}
	var errs []error
	for _, m := range vs.LabelMatchers {
		if m.Name != model.MetricNameLabel && !slices.Contains(labels, m.Name) {
			errs = append(errs, fmt.Errorf("%s has no label %q (labels: %v)", vs.Name, m.Name, labels))
		}
	}
	return errs
}

func checkGrouping(a *parser.AggregateExpr) []error {
	var have []string
	parser.Inspect(a.Expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			l, _ := metricLabels(vs.Name)
			have = append(have, l...)
		}
		return nil
	})
	var errs []error
	for _, g := range a.Grouping {
		if !slices.Contains(have, g) {
			errs = append(errs, fmt.Errorf("%s by (%s): no series inside carries %q", a.Op, strings.Join(a.Grouping, ", "), g))
		}
	}
	return errs
}

func TestCheckExprCatchesMistakes(t *testing.T) {
	tests := []struct{ expr, want string }{
		{`snigate_upstream_up == 0`, ""},
		{`max by (instance, route) (snigate_upstream_up) == 0`, ""},
		{`rate(snigate_upstream_connect_seconds_bucket{le="1"}[5m])`, ""},
		{`snigate_upstreams_up == 0`, "not one snigate exports"},
		{`snigate_upstream_up{backend="a"}`, `no label "backend"`},
		{`sum by (qtype) (snigate_upstream_up)`, `carries "qtype"`},
		{`sum(rate(snigate_bytes_total[5m])`, "unclosed"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			errs := checkExpr(tt.expr)
			if tt.want == "" && len(errs) > 0 {
				t.Fatalf("unexpected: %v", errs)
			}
			if tt.want != "" && !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), tt.want) }) {
				t.Fatalf("errors %v: want one containing %q", errs, tt.want)
			}
		})
	}
}

// TestAlertRules validates the rule file as Prometheus would (promtool
// check rules uses the same package) and checks each expression's series.
func TestAlertRules(t *testing.T) {
	groups, errs := rulefmt.Parse(readFile(t, rulesPath), false, model.UTF8Validation,
		parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", rulesPath, err)
	}
	if groups == nil {
		t.FailNow()
	}
	alerts := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = r.Expr
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: want labels.severity, annotations.summary and .description", r.Alert)
			}
			for _, err := range checkExpr(r.Expr) {
				t.Errorf("alert %s: %v", r.Alert, err)
			}
		}
	}
	// What the alerts must cover, by the series they watch.
	required := map[string]string{
		"SnigateUpstreamDown":             "snigate_upstream_up",
		"SnigateNoHealthyUpstream":        "snigate_upstream_up",
		"SnigateCertificateExpiringSoon":  "snigate_certificate_expiry_timestamp_seconds",
		"SnigateConfigReloadFailed":       "snigate_config_last_reload_successful",
		"SnigateDNSForwarderDown":         "snigate_dns_upstream_up",
		"SnigateDNSTCPConnectionsRefused": "snigate_dns_tcp_connections_refused_total",
		"SnigateAuditRecordsDropped":      "snigate_http_audit_dropped_total",
		"SnigateNoGatewayAnswered":        "snigate_dns_answer_up",
		"SnigateHTTPUpstreamErrors":       "snigate_http_requests_total",
		"SnigateHTTPRefusals":             "snigate_http_refused_total",
		"SnigateCacheFailing":             "snigate_cache_errors_total",
		"SnigateNodeCertificatesRefused":  "snigate_client_auth_failures_total",
	}
	for name, series := range required {
		if !strings.Contains(alerts[name], series) {
			t.Errorf("alert %s: missing, or not on %s", name, series)
		}
	}
	if !strings.Contains(alerts["SnigateCertificateExpiringSoon"], "14 * 86400") {
		t.Errorf("SnigateCertificateExpiringSoon: want a 14-day threshold, got %q", alerts["SnigateCertificateExpiringSoon"])
	}
}

// TestPromtoolRules runs Prometheus's own checker and the rules' unit
// tests (snigate-rules.test.yaml: how each alert fires and resolves).
func TestPromtoolRules(t *testing.T) {
	tool := needTool(t, "promtool", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", filepath.Base(rulesPath)},
		{"test", "rules", filepath.Base(rulesTestPath)},
	} {
		cmd := exec.Command(tool, args...)
		cmd.Dir = filepath.Dir(rulesPath) // rule_files are relative to the test file
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestRulesTestedByPromtool: the reload alert has a promtool case, so a
// rule that keeps firing after the fix (as the increase() form did) fails.
func TestRulesTestedByPromtool(t *testing.T) {
	text := string(readFile(t, rulesTestPath))
	for _, alert := range []string{"SnigateConfigReloadFailed", "SnigateGatewayLeftOutOfDNS",
		"SnigateNoGatewayAnswered", "SnigateHTTPUpstreamErrors", "SnigateHTTPRefusals",
		"SnigateCacheFailing", "SnigateNodeCertificatesRefused"} {
		if !strings.Contains(text, "alertname: "+alert) {
			t.Errorf("%s: no case for %s", rulesTestPath, alert)
		}
	}
}

// grafanaVars replaces dashboard variables with values PromQL accepts.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
	"${instance}", ".*", "$instance", ".*", "${route}", ".*", "$route", ".*",
)

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

var labelValuesRE = regexp.MustCompile(`label_values\((\w+)`)

func TestGrafanaDashboard(t *testing.T) {
	var d dashboard
	if err := json.Unmarshal(readFile(t, dashboardPath), &d); err != nil {
		t.Fatalf("%s: not valid JSON: %v", dashboardPath, err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("dashboard: want title and uid")
	}
	ids := map[int]bool{}
	exprs := 0
	var allExprs []string
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel %q: duplicate id %d", p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q: no queries", p.Title)
			}
			for _, tg := range p.Targets {
				exprs++
				allExprs = append(allExprs, tg.Expr)
				for _, err := range checkExpr(grafanaVars.Replace(tg.Expr)) {
					t.Errorf("panel %q: %v", p.Title, err)
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		q, _ := json.Marshal(v.Query)
		for _, m := range labelValuesRE.FindAllStringSubmatch(string(q), -1) {
			if _, ok := metricLabels(m[1]); !ok {
				t.Errorf("variable %s: label_values of unknown series %q", v.Name, m[1])
			}
		}
	}
	if exprs < 10 {
		t.Errorf("dashboard: %d queries, want the overview to cover traffic, upstreams, DNS, certificates", exprs)
	}
	// Each capability has a panel: the HTTP bridge (codes, latency,
	// refusals), the cache (hits, uplink bytes, bypasses), node identity and
	// the answer check.
	for _, series := range []string{
		"snigate_http_requests_total", "snigate_http_request_duration_seconds_bucket",
		"snigate_http_refused_total", "snigate_cache_requests_total",
		"snigate_cache_upstream_bytes_total", "snigate_cache_errors_total",
		"snigate_client_auth_failures_total", "snigate_dns_answer_up",
	} {
		if !slices.ContainsFunc(allExprs, func(e string) bool { return strings.Contains(e, series) }) {
			t.Errorf("dashboard: no panel queries %s", series)
		}
	}
}
