package testkit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Series is one gathered series: its metric's name, its labels and its
// value read as Value does.
type Series struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// AllSeries gathers g and returns every series of the metrics named in
// names (none given: of every metric), in the gatherer's order: by
// metric name, then by label values.
func AllSeries(tb testing.TB, g prometheus.Gatherer, names ...string) []Series {
	tb.Helper()
	families, err := g.Gather()
	if err != nil {
		tb.Fatalf("gather: %v", err)
	}
	var out []Series
	for _, f := range families {
		if len(names) > 0 && !slices.Contains(names, f.GetName()) {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, Series{Name: f.GetName(), Labels: labels, Value: value(m)})
		}
	}
	return out
}

// LabelString is the series' labels as "k=v,k=v", sorted by name; "" for
// a series without labels.
func (s Series) LabelString() string {
	parts := make([]string, 0, len(s.Labels))
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		parts = append(parts, k+"="+s.Labels[k])
	}
	return strings.Join(parts, ",")
}

// String is the series as "name{k=v,...} value".
func (s Series) String() string {
	return fmt.Sprintf("%s{%s} %g", s.Name, s.LabelString(), s.Value)
}
