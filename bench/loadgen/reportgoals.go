package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// goalRows are issue 21's targets, in the order: each a ratio to
// the best of the reference proxies (idle memory: to HAProxy, the base).
func goalRows() []row {
	return []row{
		{scenario: "splice-rate", key: "conn_s", label: "splice connections/s (≥ 1.0×)", higher: true, format: "%.0f"},
		{scenario: "splice-rate", key: "cpu_us_conn", label: "splice proxy CPU µs / connection (≤ 1.0×)", format: "%.1f"},
		{scenario: idleWorst, key: "kib_conn", label: "KiB RSS / idle spliced tunnel, worst reading (≤ 1.0× HAProxy)", format: "%.2f", vsBase: true},
		{scenario: "bridge-full", key: "hs_s", label: "bridge full handshakes/s (≥ 1.0×)", higher: true, format: "%.0f"},
		{scenario: "bridge-resumed", key: "hs_s", label: "bridge resumed handshakes/s (≥ 1.0×)", higher: true, format: "%.0f"},
	}
}

// writeGoals writes issue 21's target table for the subjects present
// (snigate, and snigate-base with BASE_REV: before and after in one run):
// each subject's median, the reference's, the ratio and whether the
// target is met; with two subjects, the first's ratio to the second's.
// Rows without results in this run are left out; nothing is written when
// none has any.
func writeGoals(w io.Writer, s *summary, c comparison, subjects []string) {
	subjects = slices.DeleteFunc(slices.Clone(subjects), func(t string) bool { return !slices.Contains(s.targets, t) })
	rows := slices.DeleteFunc(goalRows(), func(rw row) bool { return !s.hasRow(rw, subjects) })
	if len(subjects) == 0 || len(rows) == 0 {
		return
	}
	head := append([]string{"issue 21 target"}, subjects...)
	head = append(head, "reference (best of "+strings.Join(c.refs, ", ")+"; idle: "+c.base+")")
	for _, sub := range subjects {
		head = append(head, sub+" / reference", "met ("+sub+")")
	}
	if len(subjects) > 1 {
		head = append(head, subjects[0]+" / "+subjects[1])
	}
	fmt.Fprintf(w, "| %s |\n|---|%s\n", strings.Join(head, " | "), strings.Repeat("--:|", len(head)-1))
	for _, rw := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(goalCells(s, c, rw, subjects), " | "))
	}
}

// goalCells are one row of the target table.
func goalCells(s *summary, c comparison, rw row, subjects []string) []string {
	cells := []string{rw.label}
	for _, sub := range subjects {
		cells = append(cells, s.plain(rw, sub))
	}
	b, bt, ok := c.reference(s, rw)
	if ok {
		cells = append(cells, fmt.Sprintf(rw.format+" (%s)", b, bt)+whereSuffix(s, rw, bt))
	} else {
		cells = append(cells, "n/a")
	}
	for _, sub := range subjects {
		v, vok := s.value(rw.scenario, sub, rw.key)
		ratio := "n/a"
		if ok && vok && b != 0 {
			ratio = fmt.Sprintf("%.2f×", v/b)
		}
		cells = append(cells, ratio, c.verdict(s, rw, sub))
	}
	if len(subjects) > 1 {
		after, aok := s.value(rw.scenario, subjects[0], rw.key)
		before, bok := s.value(rw.scenario, subjects[1], rw.key)
		ratio := "n/a"
		if aok && bok && before != 0 {
			ratio = fmt.Sprintf("%.2f×", after/before)
		}
		cells = append(cells, ratio)
	}
	return cells
}

// plain is a target's median for rw without a ratio ("failed", "—" when
// it has none), with where it comes from.
func (s *summary) plain(rw row, t string) string {
	v, ok := s.value(rw.scenario, t, rw.key)
	if !ok {
		return s.cell(rw, t, "")
	}
	return fmt.Sprintf(rw.format, v) + whereSuffix(s, rw, t)
}

func whereSuffix(s *summary, rw row, t string) string {
	if at := s.where[[2]string{rw.scenario, t}]; at != "" {
		return " at " + at
	}
	return ""
}

// hasRow reports whether any of subjects has a value for rw.
func (s *summary) hasRow(rw row, subjects []string) bool {
	return slices.ContainsFunc(subjects, func(t string) bool {
		_, ok := s.value(rw.scenario, t, rw.key)
		return ok
	})
}
