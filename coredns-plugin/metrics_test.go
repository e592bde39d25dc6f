package snigate

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestNewMetricsTwice: every server block and every Corefile reload calls
// NewMetrics on the same registry; the second call must reuse the series,
// not panic or lose counts.
func TestNewMetricsTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := NewMetrics(reg)
	a.reloaded(resultSuccess)
	b := NewMetrics(reg)
	b.reloaded(resultSuccess)
	if got := testutil.ToFloat64(a.reloads.WithLabelValues(resultSuccess)); got != 2 {
		t.Errorf("reloads counted %v, want 2 across both Metrics", got)
	}
	var nilMetrics *Metrics
	nilMetrics.answered("", dns.TypeA) // must not panic
	nilMetrics.reloaded(resultFailure)
}

func TestAnswersMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	var calls int
	h := newTestHandler(t, issueStanza, []string{"."}, &calls)
	h.metrics = NewMetrics(reg)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"registry.example.test.", dns.TypeA},
		{"registry.example.test.", dns.TypeA},
		{"registry.example.test.", dns.TypeHTTPS},
		{"registry.example.test.", dns.TypeNAPTR},
		{"other.example.test.", dns.TypeA}, // not ours: not counted
	} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		if _, err := h.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP coredns_snigate_answers_total Queries for routed names that snigate answered itself, by query type.
# TYPE coredns_snigate_answers_total counter
coredns_snigate_answers_total{qtype="A",server=""} 2
coredns_snigate_answers_total{qtype="HTTPS",server=""} 1
coredns_snigate_answers_total{qtype="other",server=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "coredns_snigate_answers_total"); err != nil {
		t.Error(err)
	}
}
