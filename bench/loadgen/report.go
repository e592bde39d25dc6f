package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// row is one line of the results table: a value of a scenario.
type row struct {
	scenario, key, label string
	higher               bool // higher is better
	format               string
	// limit, when > 0, is an absolute target for the subject (lower is better).
	limit float64
	// factor, when > 0, raises a higher-is-better target from the best
	// reference to factor times it (issue 15: small blobs at 1.3×).
	factor float64
	info   bool // informative: no verdict
	// vsBase judges the row against the base target (HAProxy) instead of
	// the best reference (issue 21: idle memory at most HAProxy's).
	vsBase bool
}

// rowsFor returns the table rows for the scenarios present, in order.
func rowsFor(scenarios []string) []row {
	var rows []row
	for _, sc := range scenarios {
		switch {
		case sc == "splice-rate":
			rows = append(rows,
				row{scenario: sc, key: "conn_s", label: "1 splice conn/s", higher: true, format: "%.0f"},
				row{scenario: sc, key: "cpu_us_conn", label: "1 splice µs proxy CPU / connection", format: "%.1f"},
				row{scenario: sc, key: "per_core", label: "1 splice conn per proxy core-second", higher: true, format: "%.0f"},
				row{scenario: sc, key: "p50_ms", label: "1 splice p50 ms", format: "%.2f"},
				row{scenario: sc, key: "p99_ms", label: "1 splice p99 ms", format: "%.2f"})
		case sc == "splice-latency":
			rows = append(rows,
				row{scenario: sc, key: "p50_ms", label: "1 splice p50 ms, open loop at a fixed rate", format: "%.2f"},
				row{scenario: sc, key: "p99_ms", label: "1 splice p99 ms, open loop at a fixed rate", format: "%.2f"},
				row{scenario: sc, key: "p999_ms", label: "1 splice p99.9 ms, open loop at a fixed rate", format: "%.2f"})
		case strings.HasPrefix(sc, "splice-tput-"):
			rows = append(rows, row{scenario: sc, key: "gbit_s", label: "2 splice Gbit/s, " + streamsLabel(sc), higher: true, format: "%.2f"},
				row{scenario: sc, key: "per_core", label: "2 splice Gbit per proxy core-second, " + streamsLabel(sc), higher: true, format: "%.2f"})
		case sc == "bridge-full" || sc == "bridge-resumed":
			kind := strings.TrimPrefix(sc, "bridge-")
			rows = append(rows,
				row{scenario: sc, key: "hs_s", label: "3 bridge " + kind + " hs/s", higher: true, format: "%.0f"},
				row{scenario: sc, key: "per_core", label: "3 bridge " + kind + " hs per proxy core-second", higher: true, format: "%.0f"},
				row{scenario: sc, key: "p50_ms", label: "3 bridge " + kind + " p50 ms", format: "%.2f"},
				row{scenario: sc, key: "p99_ms", label: "3 bridge " + kind + " p99 ms", format: "%.2f"})
		case strings.HasPrefix(sc, "bridge-tput-"):
			rows = append(rows, row{scenario: sc, key: "gbit_s", label: "4 bridge Gbit/s, " + streamsLabel(sc), higher: true, format: "%.2f"},
				row{scenario: sc, key: "per_core", label: "4 bridge Gbit per proxy core-second, " + streamsLabel(sc), higher: true, format: "%.2f"})
		case strings.HasPrefix(sc, "http-"):
			rows = append(rows, httpRows(sc)...)
		case strings.HasPrefix(sc, "cache-"):
			rows = append(rows, cacheRows(sc)...)
		case sc == "idle-mem": // one fill read once (results before issue 21)
			rows = append(rows,
				row{scenario: sc, key: "kib_conn", label: "5 KiB RSS / idle tunnel", format: "%.1f", limit: 8},
				row{scenario: sc, key: "fds_conn", label: "5 fds / idle tunnel", format: "%.1f", limit: 2},
				row{scenario: sc, key: "pipes_conn", label: "5 pipe fds / idle tunnel", format: "%.2f"})
		}
	}
	return rows
}

func streamsLabel(sc string) string {
	n := sc[strings.LastIndexByte(sc, '-')+1:]
	if n == "1" {
		return "1 stream"
	}
	return n + " streams"
}

// rows returns the table rows of the scenarios present, in order; the
// idle fills get a row per reading that has results.
func (s *summary) rows() []row {
	reads := s.idleReads()
	var rows []row
	for _, sc := range s.scenarios {
		switch n, ok := idleCount(sc); {
		case ok:
			rows = append(rows, idleRows(sc, n, reads[sc])...)
		case sc == idleWorst:
			rows = append(rows, idleWorstRow(s.idleReadings))
		default:
			rows = append(rows, rowsFor([]string{sc})...)
		}
	}
	return rows
}

// summary holds the medians over rounds of every (scenario, target, key).
type summary struct {
	scenarios, targets []string
	med                map[[3]string]float64
	cpu                map[[2]string]CPUShare
	notes              map[[2]string]map[string]string
	rounds             map[string]int
	// where says which reading a derived value comes from (the worst
	// idle reading: "5,000 open, 0.2s"); idleReadings is how many
	// idle readings (counts × delays) the run has.
	where        map[[2]string]string
	idleReadings int
}

func summarize(results []Result) *summary {
	s := &summary{med: map[[3]string]float64{}, cpu: map[[2]string]CPUShare{},
		notes: map[[2]string]map[string]string{}, rounds: map[string]int{}, where: map[[2]string]string{}}
	vals := map[[3]string][]float64{}
	cpus := map[[2]string][]CPUShare{}
	for _, r := range results {
		s.scenarios = appendNew(s.scenarios, r.Scenario)
		s.targets = appendNew(s.targets, r.Target)
		if r.Notes["error"] != "" || r.Notes["skipped"] != "" {
			for k, v := range r.Notes {
				s.note(r, k, v)
			}
			continue
		}
		for k, v := range withPerCore(r) {
			vals[[3]string{r.Scenario, r.Target, k}] = append(vals[[3]string{r.Scenario, r.Target, k}], v)
		}
		cpus[[2]string{r.Scenario, r.Target}] = append(cpus[[2]string{r.Scenario, r.Target}], r.CPU)
		for k, v := range r.Notes {
			s.note(r, k, v)
		}
		s.rounds[r.Scenario] = max(s.rounds[r.Scenario], r.Round)
	}
	for k, v := range vals {
		s.med[k] = median(v)
	}
	for k, v := range cpus {
		s.cpu[k] = medianCPU(v)
	}
	s.addIdleWorst()
	return s
}

// rateKeys are the headline rates whose cost per proxy core is reported.
var rateKeys = []string{"conn_s", "hs_s", "gbit_s"}

// withPerCore adds "per_core": the headline rate divided by the proxy's
// CPU in cores. On a machine shared with other work a proxy gets varying
// CPU; what it does per core-second it got is steadier than the raw rate.
func withPerCore(r Result) map[string]float64 {
	out := maps.Clone(r.Values)
	for _, k := range rateKeys {
		if v, ok := r.Values[k]; ok && r.CPU.Proxy > 1 {
			out["per_core"] = v / (r.CPU.Proxy / 100)
		}
	}
	if v, ok := r.Values["conn_s"]; ok && v > 0 && r.CPU.Proxy > 1 && r.Scenario == "splice-rate" {
		// Results from before cpu_us_conn was measured: the same figure
		// from the rate (within the few ms the two windows differ).
		out["cpu_us_conn"] = cmp.Or(r.Values["cpu_us_conn"], r.CPU.Proxy/100/v*1e6)
	}
	return out
}

func (s *summary) note(r Result, k, v string) {
	key := [2]string{r.Scenario, r.Target}
	if s.notes[key] == nil {
		s.notes[key] = map[string]string{}
	}
	s.notes[key][k] = v
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

func medianCPU(cs []CPUShare) CPUShare {
	pick := func(f func(CPUShare) float64) float64 {
		vs := make([]float64, len(cs))
		for i, c := range cs {
			vs[i] = f(c)
		}
		return median(vs)
	}
	return CPUShare{
		Proxy:    pick(func(c CPUShare) float64 { return c.Proxy }),
		Loadgen:  pick(func(c CPUShare) float64 { return c.Loadgen }),
		Upstream: pick(func(c CPUShare) float64 { return c.Upstream }),
		Other:    pick(func(c CPUShare) float64 { return c.Other }),
		Machine:  pick(func(c CPUShare) float64 { return c.Machine }),
	}
}

func (s *summary) value(sc, t, key string) (float64, bool) {
	v, ok := s.med[[3]string{sc, t, key}]
	return v, ok
}

// comparison names the subjects and the reference proxies of the table.
type comparison struct {
	// subjects are the targets the targets apply to, each with its
	// own ratio and verdict columns: snigate, and variants of it such as
	// snigate-x25519 (the same gateway with one setting changed).
	subjects []string
	base     string   // haproxy: every ratio column is to it
	refs     []string // haproxy, nginx: the subject's target is the best of them
	// cacheBase is the target the cache scenarios' rows are judged
	// against instead (snigate: the bridge without a cache); "" none.
	cacheBase string
	// goals are the subjects of issue 21's target table, in its column
	// order (snigate, snigate-base: after and before); nil: no table.
	goals []string
}

// present returns the subjects that have results in s, in order.
func (c comparison) present(s *summary) []string {
	var out []string
	for _, t := range c.subjects {
		if slices.Contains(s.targets, t) {
			out = append(out, t)
		}
	}
	return out
}

// best returns the best reference value for row rw.
func (c comparison) best(s *summary, rw row) (float64, string, bool) {
	bestV, bestT, found := 0.0, "", false
	for _, t := range c.refs {
		v, ok := s.value(rw.scenario, t, rw.key)
		if !ok {
			continue
		}
		if !found || (rw.higher && v > bestV) || (!rw.higher && v < bestV) {
			bestV, bestT, found = v, t, true
		}
	}
	return bestV, bestT, found
}

// verdict says whether subject meets the target for rw.
func (c comparison) verdict(s *summary, rw row, subject string) string {
	v, ok := s.value(rw.scenario, subject, rw.key)
	if !ok {
		return "n/a"
	}
	if rw.limit > 0 {
		// Compare at the precision shown: a stray descriptor (a health
		// check, the profiler's connection) is not a per-tunnel cost.
		shown, _ := strconv.ParseFloat(fmt.Sprintf(cmp.Or(rw.format, "%g"), v), 64)
		return yesNo(shown <= rw.limit) + fmt.Sprintf(" (≤ %g)", rw.limit)
	}
	if rw.info || rw.key == "pipes_conn" || rw.key == "p50_ms" || rw.key == "per_core" {
		return "—" // informative rows, no target of their own
	}
	b, bt, ok := c.reference(s, rw)
	if bt == subject {
		return "—" // the reference itself
	}
	if !ok {
		return "n/a"
	}
	if rw.higher && rw.factor > 0 {
		return yesNo(v >= rw.factor*b) + fmt.Sprintf(" (≥ %g× best)", rw.factor)
	}
	if rw.higher {
		return yesNo(v >= b)
	}
	return yesNo(v <= b)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// writeTable writes the markdown table of medians, ratios and verdicts:
// one ratio column and one verdict column per subject present.
func writeTable(w io.Writer, s *summary, c comparison) {
	subjects := c.present(s)
	head := []string{"metric"}
	head = append(head, s.targets...)
	for _, sub := range subjects {
		head = append(head, fmt.Sprintf("%s / %s", sub, c.referenceLabel()), "met ("+sub+")")
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(w, "|---|%s%s\n", strings.Repeat("--:|", len(s.targets)), strings.Repeat("---|---|", len(subjects)))
	for _, rw := range s.rows() {
		cells := []string{rw.label}
		for _, t := range s.targets {
			cells = append(cells, s.cell(rw, t, c.base))
		}
		b, bt, ok := c.reference(s, rw)
		for _, sub := range subjects {
			v, vok := s.value(rw.scenario, sub, rw.key)
			ratio := "n/a"
			if ok && vok && b != 0 {
				ratio = fmt.Sprintf("%.2f× (%s)", v/b, bt)
			}
			cells = append(cells, ratio, c.verdict(s, rw, sub))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// cell is a target's median with its ratio to the base target.
func (s *summary) cell(rw row, t, base string) string {
	v, ok := s.value(rw.scenario, t, rw.key)
	if !ok {
		switch n := s.notes[[2]string{rw.scenario, t}]; {
		case n["skipped"] != "":
			return "skipped"
		case n["error"] != "":
			return "failed"
		}
		return "—"
	}
	out := fmt.Sprintf(rw.format, v)
	if b, ok := s.value(rw.scenario, base, rw.key); ok && b != 0 && t != base && !math.IsInf(v/b, 0) {
		out += fmt.Sprintf(" (%.2f×)", v/b)
	}
	if at := s.where[[2]string{rw.scenario, t}]; at != "" {
		out += " at " + at
	}
	return out
}

// writeCPU writes, per scenario and target, the median CPU of each party
// (percent of one core) and what most likely bounded the number.
func writeCPU(w io.Writer, s *summary, threads map[string]int, cores int) {
	fmt.Fprintln(w, "| scenario | target | proxy % | loadgen % | upstream % | other % | machine busy % | bound by |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|---|")
	for _, sc := range s.scenarios {
		for _, t := range s.targets {
			c, ok := s.cpu[[2]string{sc, t}]
			if !ok {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n", sc, t,
				c.Proxy, c.Loadgen, c.Upstream, c.Other, c.Machine, boundBy(sc, c, threads[t], cores))
		}
	}
}

// boundBy guesses the limit of a measurement from where the CPU went.
func boundBy(sc string, c CPUShare, threads, cores int) string {
	switch {
	case strings.HasPrefix(sc, "idle-mem"):
		return "— (memory)"
	case threads > 0 && c.Proxy >= 0.9*float64(threads)*100:
		return fmt.Sprintf("proxy CPU (%d thread(s) saturated)", threads)
	case c.Machine >= 85:
		parts := map[string]float64{"proxy": c.Proxy, "loadgen": c.Loadgen, "upstream": c.Upstream, "other work": c.Other}
		top := ""
		for k, v := range parts {
			if top == "" || v > parts[top] {
				top = k
			}
		}
		return fmt.Sprintf("machine CPU (%d cores busy; largest share: %s)", cores, top)
	default:
		return "not CPU (latency: kernel, scheduling, round trips)"
	}
}

// writeNotes lists the per-target notes (negotiated group, errors).
func writeNotes(w io.Writer, s *summary) {
	for _, sc := range s.scenarios {
		for _, t := range s.targets {
			n := s.notes[[2]string{sc, t}]
			if len(n) == 0 {
				continue
			}
			keys := make([]string, 0, len(n))
			for k := range n {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s: %s", k, n[k]))
			}
			fmt.Fprintf(w, "- %s / %s: %s\n", sc, t, strings.Join(parts, "; "))
		}
	}
}

// writeExtra lists the secondary values (resumption share, allocations,
// goroutines per tunnel, sockets/pipes) per scenario and target.
func writeExtra(w io.Writer, s *summary) {
	keys := []string{"attempts", "resumed_frac", "up_resumed_frac", "up_handshakes", "errors", "failed", "open", "open_s", "read_late_ms", "rss_mib", "sockets_conn", "pipes_conn",
		"goroutines_conn", "heap_kib_conn", "stack_kib_conn", "allocs_conn", "alloc_kib_conn", "downloads", "rss_peak_mib"}
	for _, sc := range s.scenarios {
		for _, t := range s.targets {
			var parts []string
			for _, k := range keys {
				if v, ok := s.value(sc, t, k); ok {
					parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', 4, 64))
				}
			}
			if len(parts) > 0 {
				fmt.Fprintf(w, "- %s / %s: %s\n", sc, t, strings.Join(parts, " "))
			}
		}
	}
}

var dnsMedian = regexp.MustCompile(`median queries/s: snigate ([0-9.]+), dnsmasq ([0-9.]+), ratio snigate/dnsmasq ([0-9.]+)`)

// dnsRow turns bench/dns/run.sh's summary line into a table row.
func dnsRow(out string) (string, bool) {
	m := dnsMedian.FindStringSubmatch(out)
	if m == nil {
		return "", false
	}
	r, _ := strconv.ParseFloat(m[3], 64)
	return fmt.Sprintf("| 6 DNS queries/s | snigate %s | dnsmasq %s | %s× | %s |", m[1], m[2], m[3], yesNo(r >= 1)), true
}
