package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scenario 5, idle memory (issues 8 and 21): scenario idle-mem-N fills a
// proxy with N idle tunnels and reads its RSS at each of runner.idleReads
// after the last one opened. run.sh starts the proxies afresh for every
// count, so each reading is of a fill that has just ended, never of
// tunnels left over from a smaller one.

// idlePrefix names the idle-memory scenarios: idle-mem-N for N tunnels.
const idlePrefix = "idle-mem-"

// idleScenario is the scenario name of a fill of n tunnels.
func idleScenario(n int) string { return idlePrefix + strconv.Itoa(n) }

// idleCount is the tunnel count of an idle-mem-N scenario; ok is false
// for any other name.
func idleCount(sc string) (n int, ok bool) {
	rest, found := strings.CutPrefix(sc, idlePrefix)
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// readLabel names a reading by its delay after the last tunnel opened:
// "0.2s", "2s". The value keys of a reading are kibKey(label).
func readLabel(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// kibPrefix starts the value key of a reading's RSS per tunnel.
const kibPrefix = "kib_conn_"

func kibKey(label string) string { return kibPrefix + label }

// readSeconds is the delay a reading label stands for (-1 if it is none).
func readSeconds(label string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSuffix(label, "s"), 64)
	if err != nil || !strings.HasSuffix(label, "s") {
		return -1
	}
	return v
}

// idleRead is the proxy's RSS at one reading.
type idleRead struct {
	label  string
	rssKiB int64
	late   time.Duration // how much later than due the reading was taken
}

// readIdle reads the RSS of tree at each delay of reads (ascending) after
// last, the moment the last tunnel was verified (a failed attempt that
// ends later does not move it).
func readIdle(tree []int, last time.Time, reads []time.Duration) []idleRead {
	out := make([]idleRead, 0, len(reads))
	for _, d := range reads {
		due := last.Add(d)
		time.Sleep(time.Until(due)) // the reading's schedule, not a synchronisation
		out = append(out, idleRead{label: readLabel(d), rssKiB: rssKiB(tree), late: max(0, time.Since(due))})
	}
	return out
}

// idleFill is what one fill of a proxy produced.
type idleFill struct {
	before   memSample // after the warm-up, before the fill
	reads    []idleRead
	fds      fdCount // after the last reading
	open     int     // tunnels open and verified
	openTime time.Duration
}

// values turns a fill into the measurement's values: RSS per tunnel at
// each reading (KiB), descriptors per tunnel, the opening rate.
func (f idleFill) values() (map[string]float64, error) {
	if f.open == 0 {
		return nil, fmt.Errorf("no tunnel could be opened")
	}
	n := float64(f.open)
	per := func(a, b int64) float64 { return float64(b-a) / n }
	v := map[string]float64{
		"fds_conn":     per(int64(f.before.fds.Total), int64(f.fds.Total)),
		"sockets_conn": per(int64(f.before.fds.Sockets), int64(f.fds.Sockets)),
		"pipes_conn":   per(int64(f.before.fds.Pipes), int64(f.fds.Pipes)),
		"open":         n,
		"open_s":       f.openTime.Seconds(),
	}
	if f.openTime > 0 {
		v["open_conn_s"] = n / f.openTime.Seconds()
	}
	var late time.Duration
	for _, r := range f.reads {
		v[kibKey(r.label)] = per(f.before.rssKiB, r.rssKiB)
		v["rss_mib"] = float64(r.rssKiB) / 1024
		late = max(late, r.late)
	}
	v["read_late_ms"] = float64(late) / float64(time.Millisecond)
	return v, nil
}

// idleMem is scenario idle-mem-n: 200 warm-up tunnels opened and closed,
// the baseline, then n idle tunnels each verified end to end (the
// upstream's byte came back), read at every delay of r.idleReads after
// the last of them opened.
func (r *runner) idleMem(n int) func(*runner, target, int) (Result, error) {
	return func(r *runner, t target, round int) (Result, error) {
		res := r.newResult(idleScenario(n), t, round)
		closeAll(openIdle(t.Splice, r.msgs, idleWarmup).conns)
		time.Sleep(idleSettle)
		tree := processTree(t.PID)
		prof := r.pprof(t)
		fill := idleFill{before: sampleMem(tree)}
		gBefore := prof.snapshot()
		cpu := startCPU(t.PID, r.upstreamPID)
		start := time.Now()
		opened := openIdle(t.Splice, r.msgs, n)
		res.CPU = cpu.stop()
		fill.reads = readIdle(tree, opened.last, r.idleReads)
		fill.open, fill.openTime, fill.fds = len(opened.conns), opened.last.Sub(start), countFDs(tree)
		gAfter := prof.snapshot()
		prof.saveIdle(res)
		closeAll(opened.conns)
		waitReleased(tree, fill.before.fds)
		vals, err := fill.values()
		if err != nil {
			return res, fmt.Errorf("%w: %v", err, opened.first)
		}
		res.Values = vals
		res.Values["failed"] = float64(opened.failed)
		if opened.first != nil {
			res.Notes["first_error"] = opened.first.Error()
		}
		gAfter.perConn(gBefore, len(opened.conns), res.Values)
		return res, nil
	}
}

// parseDurations parses "0.2s,2s" into ascending, distinct, positive
// durations.
func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("want a comma-separated list of positive durations such as 0.2s,2s, got %q", s)
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
