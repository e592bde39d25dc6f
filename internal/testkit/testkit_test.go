package testkit

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestLogSinkWaitsForTheLine: Wait returns a line written after it began
// waiting, with every part in it, not an earlier line with only some.
func TestLogSinkWaitsForTheLine(t *testing.T) {
	var sink LogSink // the zero value is ready
	log := sink.Logger()
	log.Info("connection", "result", "ok")
	waiting := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-waiting
		log.Warn("connection", "result", "timeout")
	}()
	close(waiting)
	line := sink.Wait(t, "connection", "result=timeout")
	<-done
	if !containsAll(line, []string{"level=WARN", "result=timeout"}) {
		t.Errorf("Wait = %q, want the Warn line", line)
	}
	if got := sink.Lines("connection"); len(got) != 2 {
		t.Errorf("Lines(connection) = %q, want 2 lines", got)
	}
	if !sink.Contains("result=ok") || sink.Contains("result=refused") {
		t.Errorf("Contains is wrong for %q", sink.String())
	}
}

func TestValueAndGathered(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"route", "result"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds", Help: "h"}, []string{"route"})
	reg.MustRegister(c, g, h)
	c.WithLabelValues("a", "ok").Add(2)
	c.WithLabelValues("a", "fail").Add(3)
	c.WithLabelValues("b", "ok").Add(5)
	g.Set(7)
	h.WithLabelValues("a").Observe(1)
	h.WithLabelValues("a").Observe(2)
	values := []struct {
		name string
		m    prometheus.Metric
		want float64
	}{
		{name: "counter", m: c.WithLabelValues("a", "fail"), want: 3},
		{name: "gauge", m: g, want: 7},
		{name: "histogram count", m: h.WithLabelValues("a").(prometheus.Metric), want: 2},
	}
	for _, tt := range values {
		t.Run(tt.name, func(t *testing.T) {
			if got := Value(t, tt.m); got != tt.want {
				t.Errorf("Value = %v, want %v", got, tt.want)
			}
		})
	}
	gathered := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
		found  bool
	}{
		{name: "one series", metric: "c_total", labels: map[string]string{"route": "a", "result": "ok"}, want: 2, found: true},
		{name: "sum of a route", metric: "c_total", labels: map[string]string{"route": "a"}, want: 5, found: true},
		{name: "sum of all", metric: "c_total", want: 10, found: true},
		{name: "no such series", metric: "c_total", labels: map[string]string{"route": "z"}},
		{name: "no such label", metric: "c_total", labels: map[string]string{"upstream": "a"}},
		{name: "no such metric", metric: "nope_total"},
	}
	for _, tt := range gathered {
		t.Run(tt.name, func(t *testing.T) {
			got, found := Gathered(t, reg, tt.metric, tt.labels)
			if got != tt.want || found != tt.found {
				t.Errorf("Gathered = %v, %v; want %v, %v", got, found, tt.want, tt.found)
			}
		})
	}
}

// TestAllSeries: every series of the metrics asked for (all without a
// name), labels and values as gathered, in the gatherer's order.
func TestAllSeries(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"route", "result"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	reg.MustRegister(c, g)
	c.WithLabelValues("b", "ok").Add(5)
	c.WithLabelValues("a", "fail").Add(3)
	g.Set(7)
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{name: "all", want: []string{"c_total{result=fail,route=a} 3", "c_total{result=ok,route=b} 5", "g{} 7"}},
		{name: "one metric", names: []string{"g"}, want: []string{"g{} 7"}},
		{name: "no such metric", names: []string{"nope_total"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range AllSeries(t, reg, tt.names...) {
				got = append(got, s.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("AllSeries = %q, want %q", got, tt.want)
			}
		})
	}
	if s := AllSeries(t, reg, "c_total")[0]; s.Labels["route"] != "a" || s.LabelString() != "result=fail,route=a" {
		t.Errorf("first c_total series = %+v, want route a", s)
	}
}

// TestWaitForContextFailsWhenTheContextEnds: the caller's context, not
// WaitLimit, bounds the wait; the failure carries why's text.
func TestWaitForContextFailsWhenTheContextEnds(t *testing.T) {
	var sink LogSink
	sink.Logger().Info("starting")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tb := &fatalRecorder{TB: t}
	sink.WaitForContext(ctx, tb, func(text string) bool { return strings.Contains(text, "ready") },
		func(text string) string { return "never ready: " + text })
	if !strings.Contains(tb.fatal, "never ready: ") || !strings.Contains(tb.fatal, "msg=starting") {
		t.Errorf("Fatal = %q, want why's text with the log", tb.fatal)
	}
	go sink.Logger().Info("ready")
	text := sink.WaitForContext(t.Context(), t, func(text string) bool { return strings.Contains(text, "msg=ready") },
		func(string) string { return "no ready line" })
	if !strings.Contains(text, "msg=starting") {
		t.Errorf("WaitForContext = %q, want everything written", text)
	}
}

// fatalRecorder keeps what Fatal was called with instead of ending the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (f *fatalRecorder) Helper()           {}
func (f *fatalRecorder) Fatal(args ...any) { f.fatal = fmt.Sprint(args...) }

func TestStaticCert(t *testing.T) {
	want := &tls.Certificate{Certificate: [][]byte{{1}}}
	got, err := StaticCert{Cert: want}.GetCertificate(nil)
	if got != want || err != nil {
		t.Errorf("GetCertificate = %p, %v; want %p, nil", got, err, want)
	}
}

func TestPollReturnsOnceTrue(t *testing.T) {
	var n atomic.Int32
	Poll(t, "the third look", func() bool { return n.Add(1) == 3 })
	if got := n.Load(); got != 3 {
		t.Errorf("cond called %d times, want 3", got)
	}
}
