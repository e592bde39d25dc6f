package metricvec

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestInitAndDeleteRoute(t *testing.T) {
	counters := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total"}, []string{"route", "reason"})
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds"}, []string{"route"})
	gauges := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"route", "upstream"})
	tests := []struct {
		name string
		init func()
		vec  prometheus.Collector
		want int
	}{
		{name: "one per last value", init: func() { Init(counters.WithLabelValues, []string{"a"}, "x", "y", "z") }, vec: counters, want: 3},
		{name: "no last value", init: func() { Init(gauges.WithLabelValues, []string{"a"}) }, vec: gauges, want: 0},
		{name: "lead empty", init: func() { Init(hist.WithLabelValues, nil, "a") }, vec: hist, want: 1},
		{name: "gauges", init: func() { Init(gauges.WithLabelValues, []string{"a"}, "u1", "u2") }, vec: gauges, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.init()
			if n := testutil.CollectAndCount(tt.vec); n != tt.want {
				t.Fatalf("%d series after Init, want %d", n, tt.want)
			}
		})
	}
	Init(counters.WithLabelValues, []string{"b"}, "x")
	Init(gauges.WithLabelValues, []string{"b"}, "u1")
	DeleteRoute("a", counters, hist, gauges)
	for _, c := range []struct {
		name string
		vec  prometheus.Collector
		want int
	}{{"counters", counters, 1}, {"histogram", hist, 0}, {"gauges", gauges, 1}} {
		if n := testutil.CollectAndCount(c.vec); n != c.want {
			t.Errorf("%s: %d series after DeleteRoute(a), want %d (route b's)", c.name, n, c.want)
		}
	}
	DeleteMatch(prometheus.Labels{"route": "b", "upstream": "u1"}, gauges)
	if n := testutil.CollectAndCount(gauges); n != 0 {
		t.Errorf("%d gauges after DeleteMatch, want 0", n)
	}
}
