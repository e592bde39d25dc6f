package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value reads one metric, such as a vector's child
// (m.requests.WithLabelValues("registry", "ok")): a counter's or gauge's
// value, a histogram's or summary's sample count.
func Value(tb testing.TB, m prometheus.Metric) float64 {
	tb.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		tb.Fatalf("read metric %s: %v", m.Desc(), err)
	}
	return value(&d)
}

// Gathered is the sum of the series named name in g whose labels include
// every one of labels (nil: all of them), read as Value does, and whether
// there is any such series.
func Gathered(tb testing.TB, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	tb.Helper()
	families, err := g.Gather()
	if err != nil {
		tb.Fatalf("gather: %v", err)
	}
	var sum float64
	found := false
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				sum += value(m)
				found = true
			}
		}
	}
	return sum, found
}

func value(d *dto.Metric) float64 {
	switch {
	case d.GetCounter() != nil:
		return d.GetCounter().GetValue()
	case d.GetGauge() != nil:
		return d.GetGauge().GetValue()
	case d.GetHistogram() != nil:
		return float64(d.GetHistogram().GetSampleCount())
	case d.GetSummary() != nil:
		return float64(d.GetSummary().GetSampleCount())
	}
	return d.GetUntyped().GetValue()
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}
