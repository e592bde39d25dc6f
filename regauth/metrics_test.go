package regauth

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsRouteLifecycle(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.InitRoute("a")
	m.InitRoute("b")
	if n := testutil.CollectAndCount(m.tokens); n != 8 {
		t.Fatalf("%d series after InitRoute of two routes, want 8", n)
	}
	m.token("a", ResultFetched)
	m.DeleteRoute("a")
	if n := testutil.CollectAndCount(m.tokens); n != 4 {
		t.Fatalf("%d series after DeleteRoute, want 4", n)
	}
	var nilM *Metrics
	nilM.InitRoute("a")
	nilM.token("a", ResultCached)
	nilM.DeleteRoute("a")
}

// TestMetricNamesInREADME keeps the README's Metrics section and the
// series in step.
func TestMetricNamesInREADME(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"snigate_http_auth_tokens_total", "`fetched`", "`cached`", "`refused`", "`error`"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md does not mention %s", want)
		}
	}
}
