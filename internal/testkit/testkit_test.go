package testkit

import (
	"crypto/tls"
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
