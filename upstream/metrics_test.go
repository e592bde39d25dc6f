package upstream

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
)

// series gathers reg into "name{label=value,...} value" lines, sorted.
func series(t *testing.T, reg prometheus.Gatherer) []string {
	t.Helper()
	var out []string
	for _, s := range testkit.AllSeries(t, reg) {
		out = append(out, s.String())
	}
	slices.Sort(out)
	return out
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	d := &switchDialer{down: map[string]bool{"10.0.0.2:443": true}}
	old := mustPool(t, Config{Route: "registry", Addrs: threeAddrs, Check: Check{Fall: 1}, DialContext: d.DialContext, Metrics: m})
	rounds(old, 2)
	if err := old.SetState("10.0.0.3:443", StateMaint); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"snigate_upstream_checks_total{result=fail,route=registry,upstream=10.0.0.2:443} 2",
		"snigate_upstream_checks_total{result=ok,route=registry,upstream=10.0.0.1:443} 2",
		"snigate_upstream_checks_total{result=ok,route=registry,upstream=10.0.0.3:443} 2",
		"snigate_upstream_state{route=registry,state=drain,upstream=10.0.0.3:443} 0",
		"snigate_upstream_state{route=registry,state=maint,upstream=10.0.0.3:443} 1",
		"snigate_upstream_state{route=registry,state=ready,upstream=10.0.0.3:443} 0",
		"snigate_upstream_up{route=registry,upstream=10.0.0.2:443} 0",
	}
	if got := series(t, reg); !slices.Equal(got, want) {
		t.Fatalf("series before Run:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A reload drops 10.0.0.1: Adopt deletes its series and publishes the
	// adopted hosts' state.
	p := mustPool(t, Config{Route: "registry", Addrs: threeAddrs[1:], Check: Check{Fall: 1}, DialContext: d.DialContext, Metrics: m})
	p.Adopt(old)
	got := series(t, reg)
	wantSet := map[string]bool{
		"snigate_upstream_checks_total{result=fail,route=registry,upstream=10.0.0.2:443} 2": true,
		"snigate_upstream_checks_total{result=ok,route=registry,upstream=10.0.0.3:443} 2":   true,
		"snigate_upstream_checks_total{result=ok,route=registry,upstream=10.0.0.2:443} 0":   true, // created at 0
		"snigate_upstream_checks_total{result=fail,route=registry,upstream=10.0.0.3:443} 0": true,
		"snigate_upstream_state{route=registry,state=ready,upstream=10.0.0.2:443} 1":        true,
		"snigate_upstream_state{route=registry,state=maint,upstream=10.0.0.3:443} 1":        true,
		"snigate_upstream_up{route=registry,upstream=10.0.0.2:443} 0":                       true,
		"snigate_upstream_up{route=registry,upstream=10.0.0.3:443} 1":                       true,
	}
	for _, s := range got {
		if strings.Contains(s, "10.0.0.1:443") {
			t.Errorf("series of the removed upstream survived Adopt: %s", s)
		}
		delete(wantSet, s)
	}
	if len(wantSet) > 0 {
		t.Errorf("missing after Adopt: %v\ngot\n%s", slices.Sorted(maps.Keys(wantSet)), strings.Join(got, "\n"))
	}

	m.DeleteRoute("registry")
	if got := series(t, reg); len(got) != 0 {
		t.Fatalf("series after DeleteRoute: %q, want none", got)
	}
}

// Regression: a check counter appeared at its first increment, so
// increase() missed an upstream's first failed check. Run creates both
// results of every host at 0.
func TestRunCreatesCheckSeriesAtZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		var d fakeDialer
		p := mustPool(t, Config{Route: "registry", Addrs: []string{"10.0.0.1:443"}, Check: Check{Interval: time.Hour},
			DialContext: d.DialContext, Metrics: NewMetrics(reg)})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait() // the first round passed
		got := series(t, reg)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"snigate_upstream_checks_total{result=fail,route=registry,upstream=10.0.0.1:443} 0",
			"snigate_upstream_checks_total{result=ok,route=registry,upstream=10.0.0.1:443} 1",
		} {
			if !slices.Contains(got, want) {
				t.Errorf("after the first round: want %s in\n%s", want, strings.Join(got, "\n"))
			}
		}
	})
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.DeleteRoute("r")
	m.DeleteUpstream("r", "u")
	m.setUp("r", "u", true)
	m.setState("r", "u", StateReady)
	m.countCheck("r", "u", "ok")
	m.initChecks("r", "u")
}
