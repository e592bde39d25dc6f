package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// idleWorst is the report's own scenario holding each target's worst
// idle reading: the largest median RSS per tunnel over every count and
// every reading (issue 21: "the worst of those six is the figure").
// Medians are taken over rounds for each count and reading first, then
// the worst of them is picked, so one noisy round does not make it.
const idleWorst = "idle-mem-worst"

// idleRows are the rows of one fill (idle-mem-N): RSS per tunnel at each
// reading, judged against the base proxy (HAProxy, issue 21's reference
// for idle memory), descriptors per tunnel and the opening rate.
func idleRows(sc string, n int, reads []string) []row {
	open := thousands(n) + " open"
	var rows []row
	for _, lbl := range reads {
		rows = append(rows, row{scenario: sc, key: kibKey(lbl), format: "%.2f", vsBase: true,
			label: fmt.Sprintf("5 KiB RSS / idle tunnel, %s, read %s after the last opened", open, lbl)})
	}
	return append(rows,
		row{scenario: sc, key: "fds_conn", label: "5 fds / idle tunnel, " + open, format: "%.1f", limit: 2},
		row{scenario: sc, key: "open_conn_s", label: fmt.Sprintf("5 idle tunnels opened/s (%d openers), %s", idleOpeners, open),
			higher: true, format: "%.0f", info: true})
}

// idleWorstRow is the row of the worst idle reading of readings in all.
func idleWorstRow(readings int) row {
	return row{scenario: idleWorst, key: "kib_conn", format: "%.2f", vsBase: true,
		label: fmt.Sprintf("5 KiB RSS / idle tunnel, worst of %d readings (issue 21's figure)", readings)}
}

// idleReads returns, per idle-mem-N scenario, the labels of the readings
// that have results, by delay.
func (s *summary) idleReads() map[string][]string {
	out := map[string][]string{}
	for k := range s.med {
		lbl, isRead := strings.CutPrefix(k[2], kibPrefix)
		if _, ok := idleCount(k[0]); ok && isRead && !slices.Contains(out[k[0]], lbl) {
			out[k[0]] = append(out[k[0]], lbl)
		}
	}
	for _, labels := range out {
		slices.SortFunc(labels, func(a, b string) int { return cmp.Compare(readSeconds(a), readSeconds(b)) })
	}
	return out
}

// addIdleWorst records each target's worst idle reading as scenario
// idleWorst (key kib_conn), where it was in s.where, and appends
// idleWorst to the scenarios after the last fill. A target missing some
// readings (a failed fill) says how many it had.
func (s *summary) addIdleWorst() {
	reads := s.idleReads()
	for _, labels := range reads {
		s.idleReadings += len(labels)
	}
	if s.idleReadings == 0 {
		return
	}
	for _, t := range s.targets {
		worst, at, n := 0.0, "", 0
		for _, sc := range s.scenarios {
			count, _ := idleCount(sc)
			for _, lbl := range reads[sc] {
				v, ok := s.value(sc, t, kibKey(lbl))
				if !ok {
					continue
				}
				if n++; n == 1 || v > worst {
					worst, at = v, fmt.Sprintf("%s open, %s", thousands(count), lbl)
				}
			}
		}
		if n == 0 {
			continue
		}
		if n < s.idleReadings {
			at += fmt.Sprintf("; only %d of %d readings", n, s.idleReadings)
		}
		s.med[[3]string{idleWorst, t, "kib_conn"}] = worst
		s.where[[2]string{idleWorst, t}] = at
	}
	after := len(s.scenarios)
	for i, sc := range s.scenarios {
		if _, ok := idleCount(sc); ok {
			after = i + 1
		}
	}
	s.scenarios = slices.Insert(s.scenarios, after, idleWorst)
}

// idleCounts are the fills' tunnel counts, in run order: "1,000".
func (s *summary) idleCounts() []string {
	var out []string
	for _, sc := range s.scenarios {
		if n, ok := idleCount(sc); ok {
			out = append(out, thousands(n))
		}
	}
	return out
}

// thousands writes n with a comma every three digits: 20,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
